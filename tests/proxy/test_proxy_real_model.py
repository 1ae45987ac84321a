"""The real `openai` client against the proxy serving the real SmolLM2-135M: plain, streaming, tools over
several turns; the recorded trajectory is token-exact and its logprobs match a teacher-forced recomputation."""

from __future__ import annotations

import openai
import pytest
import torch

pytestmark = pytest.mark.slow


def _client(sess):
    return openai.OpenAI(base_url=sess.base_url, api_key="unused", max_retries=0)


def _teacher_forced(model, ids: list[int]) -> list[float]:
    """log p(ids[i] | ids[:i]) for every position i >= 1, in one forward pass (temperature 1, no truncation)."""
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
    return logits.log_softmax(-1).gather(1, torch.tensor(ids[1:]).unsqueeze(1))[:, 0].tolist()


def test_plain_chat_returns_what_was_recorded(real_proxy):
    proxy, spy = real_proxy
    sess = proxy.session()
    resp = _client(sess).chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Say hello."}], seed=1, max_tokens=16, logprobs=True
    )
    (call,) = sess.calls
    assert resp.choices[0].message.content == call.reply["content"]
    assert resp.choices[0].finish_reason in ("stop", "length") and resp.choices[0].finish_reason == call.finish_reason
    assert (
        resp.usage.prompt_tokens == call.prompt_len and resp.usage.completion_tokens == len(call.completion_ids) <= 16
    )
    assert [t.logprob for t in resp.choices[0].logprobs.content] == pytest.approx(call.logprobs)
    assert spy.prompts[-1] == sess.rollouts()[0].prompt_ids


def test_streaming_chunks_rebuild_the_recorded_reply(real_proxy):
    proxy, _ = real_proxy
    sess = proxy.session()
    stream = _client(sess).chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Write one sentence about the sea."}],
        seed=2,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage, roles = "", None, None, []
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            roles += [choice.delta.role] if choice.delta.role else []
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    (call,) = sess.calls
    assert roles == ["assistant"] and text == (call.reply["content"] or "")
    assert finish == call.finish_reason and usage.completion_tokens == len(call.completion_ids)


def test_tool_conversation_over_turns_is_token_exact(real_proxy, tools):
    proxy, spy = real_proxy
    sess = proxy.session()
    client = _client(sess)
    start = len(spy.prompts)
    msgs = [
        {"role": "system", "content": "You can call the add tool."},
        {"role": "user", "content": "What is 2+3? Use the add tool."},
    ]
    for turn in range(3):
        resp = client.chat.completions.create(
            model="smollm2", messages=msgs, tools=tools, seed=10 + turn, max_tokens=24
        )
        msg = resp.choices[0].message
        msgs.append(msg.model_dump(exclude_none=True))
        if msg.tool_calls:
            msgs += [{"role": "tool", "tool_call_id": c.id, "content": "5"} for c in msg.tool_calls]
        else:
            msgs.append({"role": "user", "content": f"Now add {turn} and 7."})
    assert len(sess.calls) == 3
    # every call was continued exactly; one cut at max_tokens is closed by a masked end-of-turn id (truncation "close")
    assert len(sess.segments) == 1
    for prev, nxt in zip(sess.calls, sess.calls[1:], strict=False):
        assert (nxt.bridge_ids[:1] == [proxy.core.tokenizer.end_of_turn_id]) == (prev.finish_reason == "length")
    prompts = spy.prompts[start:]
    for seg in sess.segments:
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            assert prompts[b] == prompts[a] + sess.calls[a].completion_ids + sess.calls[b].bridge_ids
    # logprobs aligned: each sampled id's logprob equals the model's own (temperature 1) in context
    model = spy.inner._model
    for rollout in sess.rollouts():
        view = rollout.token_view()
        ids = view["prompt_ids"] + view["completion_ids"]
        recomputed = _teacher_forced(model, ids)[len(view["prompt_ids"]) - 1 :]
        sampled = [(lp, r) for lp, r, m in zip(view["logprobs"], recomputed, view["env_mask"], strict=True) if m]
        assert sampled and [a for a, _ in sampled] == pytest.approx([b for _, b in sampled], abs=2e-3)
        assert rollout.turns and all(len(t.logprobs) == len(t.completion_ids) for t in rollout.turns)


def test_rollouts_feed_the_trl_adapter(real_proxy):
    from rollgym.integrations.trl.rollout_func import to_trl_columns

    proxy, _ = real_proxy
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "Hi!"}]
    first = client.chat.completions.create(model="smollm2", messages=msgs, seed=3, max_tokens=8)
    msgs += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Bye!"}]
    client.chat.completions.create(model="smollm2", messages=msgs, seed=4, max_tokens=8)
    cols = to_trl_columns(sess.rollouts(), pad_id=0)
    n = len(sess.rollouts())
    assert len(cols["prompt_ids"]) == n and all(
        len(c) == len(m) == len(lp)
        for c, m, lp in zip(cols["completion_ids"], cols["env_mask"], cols["logprobs"], strict=True)
    )
    assert sum(cols["env_mask"][-1]) == len(sess.calls[-1].completion_ids) + (
        len(sess.calls[0].completion_ids) if n == 1 else 0
    )
