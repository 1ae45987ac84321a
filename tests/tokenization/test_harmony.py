"""GPT-OSS through openai-harmony: trajectories and parses checked against the library itself."""

from __future__ import annotations

import json

import pytest
from openai_harmony import Author, Conversation, Message, Role

from rollgym.tokenization.certify import TOOLS

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}


@pytest.fixture(scope="module")
def tok(family_tok):
    return family_tok("gpt-oss")


@pytest.fixture(scope="module")
def enc(tok):
    return tok.codec._encoding


def _ids(enc, text: str) -> list[int]:
    return list(enc.encode(text, allowed_special="all"))


def test_bridge_after_a_call_is_the_librarys_rendering(tok, enc):
    """Prompt, a sampled call ending in <|call|>, the tool's result: ids equal the library's own render."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}]
    traj = tok.start(messages, TOOLS)
    sampled = _ids(
        enc,
        "<|channel|>analysis<|message|>Need the tool.<|end|><|start|>assistant to=functions.get_weather"
        '<|channel|>commentary <|constrain|>json<|message|>{"city": "Oslo"}<|call|>',
    )
    traj.add_completion(sampled, None, "stop")
    parsed = tok.parse_completion(sampled, TOOLS)
    assert parsed.errors == [] and parsed.message["reasoning_content"] == "Need the tool."
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    traj.messages.append(parsed.message)
    bridge = traj.add_messages([{"role": "tool", "tool_call_id": parsed.tool_calls[0]["id"], "content": "-3C"}])
    assert (
        tok.decode(bridge)
        == "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>-3C<|end|><|start|>assistant"
    )
    # The library renders the same conversation (analysis kept: no final answer yet) to exactly these ids.
    lib = tok.codec
    conv = lib._conversation(
        [*messages, {**parsed.message}, {"role": "tool", "name": "get_weather", "content": "-3C"}], TOOLS, {}
    )
    reference = enc.render_conversation_for_completion(Conversation.from_messages(conv), Role.ASSISTANT)
    assert traj.next_prompt_ids == list(reference)


def test_return_ends_an_answer_and_history_writes_end_and_drops_analysis(tok, enc):
    """The model ends an answer with <|return|>; the bridge continues after it. The library's re-render writes
    <|end|> there and drops the analysis once a final exists: certification reports the rewrite."""
    traj = tok.start([{"role": "user", "content": "Hi"}])
    answer = _ids(
        enc, "<|channel|>analysis<|message|>Greet.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"
    )
    traj.add_completion(answer, None, "stop")
    bridge = traj.add_messages([{"role": "user", "content": "Again"}])
    assert tok.decode(bridge) == "<|start|>user<|message|>Again<|end|><|start|>assistant"
    rerender = tok.prompt_ids(
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!", "reasoning_content": "Greet."},
            {"role": "user", "content": "Again"},
        ]
    )
    assert "Greet." not in tok.decode(rerender) and "Greet." in tok.decode(traj.next_prompt_ids)
    assert tok.decode(rerender).count("<|return|>") == 0 and tok.decode(traj.next_prompt_ids).count("<|return|>") == 1
    statuses = {p.name: p.status for p in tok.certify().probes}
    assert statuses["user_followup"] == "rewrites_history" and statuses["tool_result"] == "pass"


def test_stop_ids_are_the_librarys_assistant_action_stops(tok, enc):
    assert tok.stop_token_ids == sorted(enc.stop_tokens_for_assistant_actions())  # <|return|>, <|call|>
    assert tok.end_of_turn_id == _ids(enc, "<|end|>")[0]


def test_channel_before_recipient_and_preambles_parse_like_the_library(tok, enc):
    sampled = _ids(
        enc,
        "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.search <|constrain|>json<|message|>{"query": "x", "limit": 2}<|call|>',
    )
    parsed = tok.parse_completion(sampled, TOOLS)
    assert parsed.errors == [] and parsed.message["content"] == "Checking."
    assert json.loads(parsed.tool_calls[0]["function"]["arguments"]) == {"query": "x", "limit": 2}
    library = enc.parse_messages_from_completion_tokens(sampled, Role.ASSISTANT)
    assert [m.recipient for m in library] == [None, "functions.search"]


@pytest.mark.parametrize(
    "text",
    [
        "no header at all <|call|>",
        '<|channel|>commentary to=functions.search<|message|>{"query": <|call|>',
        "<|channel|>commentary to=browser.open<|message|>{}<|call|>",
    ],
)
def test_malformed_harmony_is_an_error_for_the_model_not_an_exception(tok, enc, text):
    parsed = tok.parse_completion(_ids(enc, text), TOOLS)
    assert parsed.errors and parsed.tool_calls == [] and parsed.error_message().startswith("Error: ")


def test_the_published_jinja_template_is_not_the_library(tok, family_tok):
    """GPT-OSS's Jinja template writes `commentary json` (no <|constrain|>) where openai-harmony writes
    `commentary <|constrain|>json`: rollgym renders with the library, the model's reference."""
    from rollgym.tokenization.families import template_text

    jinja = template_text("gpt_oss.jinja")
    assert "<|constrain|>" not in jinja.split("to=functions.")[1][:200] if "to=functions." in jinja else True
    call = {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}
    written = tok.decode(tok.codec.completion_ids(call, TOOLS))
    assert "<|constrain|>json" in written


def test_tool_results_without_a_name_take_it_from_the_call(tok, enc):
    traj = tok.start([{"role": "user", "content": "Weather?"}], TOOLS)
    call = _ids(
        enc, ' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Oslo"}<|call|>'
    )
    traj.add_completion(call, None, "stop", message={"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]})
    bridge = traj.add_messages([{"role": "tool", "tool_call_id": "c1", "content": "-3C"}])
    assert tok.decode(bridge).startswith("<|start|>functions.get_weather to=assistant")
    author = Author.new(Role.TOOL, "functions.get_weather")
    result = Message.from_author_and_content(author, "-3C").with_channel("commentary").with_recipient("assistant")
    assert bridge[: len(enc.render(result))] == list(enc.render(result))


@pytest.mark.parametrize("name", ["gpt-oss", "mistral-v11"])
def test_library_tokenizers_pickle_for_worker_processes(family_tok, name):
    """Ray actors and worker processes receive the tokenizer pickled: the library handle is rebuilt there."""
    import pickle

    tok = family_tok(name)
    again = pickle.loads(pickle.dumps(tok))
    conv = [{"role": "user", "content": "Hi"}]
    assert again.prompt_ids(conv, TOOLS) == tok.prompt_ids(conv, TOOLS) and again.stop_token_ids == tok.stop_token_ids
