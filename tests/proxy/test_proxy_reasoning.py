"""Reasoning models: `<think>` text comes back as `reasoning_content` (plain and streamed); clients that drop it
when echoing the reply still continue the same segment."""

from __future__ import annotations

import openai
import pytest
from support import paired_tokenizer

from rollgym.rollouts.policy import Policy


@pytest.fixture(scope="module")
def think_tok(smollm2_hf_tokenizer):
    from rollgym.tokenization import ChatTokenizer

    return ChatTokenizer(paired_tokenizer(smollm2_hf_tokenizer, "qwen3"))


def test_reasoning_content_plain_streamed_and_dropped_on_echo(think_tok):
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.proxy import RecordingProxy

    def say(text):
        return think_tok.encode(text) + [think_tok.end_of_turn_id]

    engine = ScriptedEngine(
        [say("<think>\nTwo plus two.\n</think>\n\nIt is 4."), say("<think>\nEasy.\n</think>\n\nYes.")]
    )
    proxy = RecordingProxy(Policy(engine=engine, tokenizer=think_tok))
    with proxy.in_thread():
        sess = proxy.session()
        client = openai.OpenAI(base_url=sess.base_url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "2+2?"}]
        first = client.chat.completions.create(model="m", messages=msgs).choices[0].message
        assert first.content == "It is 4." and first.model_extra["reasoning_content"].strip() == "Two plus two."
        msgs += [
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": "Sure?"},
        ]  # reasoning dropped
        reasoning, content = "", ""
        for chunk in client.chat.completions.create(model="m", messages=msgs, stream=True):
            for choice in chunk.choices:
                reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                content += choice.delta.content or ""
    assert content == "Yes." and reasoning.strip() == "Easy."
    assert [s.reason for s in sess.segments] == ["first call"] and len(sess.calls) == 2
    assert sess.calls[1].reused_len == sess.calls[0].prompt_len + len(sess.calls[0].completion_ids)


def _think_proxy(think_tok, replies):
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.proxy import RecordingProxy

    script = [think_tok.encode(text) + [think_tok.end_of_turn_id] for text in replies]
    return RecordingProxy(Policy(engine=ScriptedEngine(script), tokenizer=think_tok))


def test_anthropic_thinking_blocks_out_and_back(think_tok):
    import anthropic

    proxy = _think_proxy(
        think_tok, ["<think>\nTwo plus two.\n</think>\n\nIt is 4.", "<think>\nEasy.\n</think>\n\nYes."]
    )
    with proxy.in_thread():
        sess = proxy.session()
        client = anthropic.Anthropic(base_url=sess.base_url.removesuffix("/v1"), api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "2+2?"}]
        first = client.messages.create(model="m", max_tokens=50, messages=msgs)
        assert [b.type for b in first.content] == ["thinking", "text"] and first.content[1].text == "It is 4."
        assert first.content[0].thinking.strip() == "Two plus two."
        msgs += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": "Sure?"},
        ]  # thinking kept, as Claude Code does
        with client.messages.stream(model="m", max_tokens=50, messages=msgs) as stream:
            kinds = {e.delta.type for e in stream if e.type == "content_block_delta"}
            second = stream.get_final_message()
    assert kinds == {"thinking_delta", "text_delta"} and second.content[1].text == "Yes."
    assert [s.reason for s in sess.segments] == ["first call"] and len(sess.calls) == 2
    assert sess.calls[1].reused_len == sess.calls[0].prompt_len + len(sess.calls[0].completion_ids)


def test_responses_reasoning_item_out_and_ignored_back(think_tok):
    proxy = _think_proxy(
        think_tok, ["<think>\nTwo plus two.\n</think>\n\nIt is 4.", "<think>\nEasy.\n</think>\n\nYes."]
    )
    with proxy.in_thread():
        sess = proxy.session()
        client = openai.OpenAI(base_url=sess.base_url, api_key="x", max_retries=0)
        items = [{"role": "user", "content": "2+2?"}]
        first = client.responses.create(model="m", input=items, store=False)
        assert [o.type for o in first.output] == ["reasoning", "message"] and first.output_text == "It is 4."
        items += [o.model_dump(exclude_none=True) for o in first.output] + [{"role": "user", "content": "Sure?"}]
        second = client.responses.create(model="m", input=items, store=False)
    assert second.output_text == "Yes."
    assert [s.reason for s in sess.segments] == ["first call"] and len(sess.calls) == 2
