"""Prefix matching with a scripted engine: continuing calls share exact ids; rewrites start new segments."""

from __future__ import annotations

import json

import openai
import pytest


def _client(sess):
    return openai.OpenAI(base_url=sess.base_url, api_key="unused", max_retries=0)


def _assert_chain(spy, sess):
    """Within each segment, every prompt = previous prompt + its completion + the bridge (token-exact)."""
    calls = sess.calls
    for seg in sess.segments:
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            prev, nxt = calls[a], calls[b]
            assert spy.prompts[b] == spy.prompts[a] + prev.completion_ids + nxt.bridge_ids
            assert nxt.reused_len == len(spy.prompts[a]) + len(prev.completion_ids)


def test_tool_calls_over_turns_continue_one_segment(scripted_proxy, scripts, tools):
    proxy, spy = scripted_proxy(
        [scripts.call("add", a=1, b=2), scripts.call("add", a=3, b=4), scripts.text("7 and 3.")]
    )
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "Add 1+2 and 3+4."}]
    for turn in range(3):
        resp = client.chat.completions.create(model="m", messages=msgs, tools=tools)
        msg = resp.choices[0].message
        if turn < 2:
            assert resp.choices[0].finish_reason == "tool_calls"
            assert msg.content is None and msg.tool_calls[0].function.name == "add"
            # clients re-serialise arguments: compact JSON must still match
            dumped = msg.model_dump(exclude_none=True)
            dumped["tool_calls"][0]["function"]["arguments"] = json.dumps(
                json.loads(msg.tool_calls[0].function.arguments), separators=(",", ":")
            )
            msgs += [dumped, {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": str(3 + 4 * turn)}]
        else:
            assert msg.content == "7 and 3." and resp.choices[0].finish_reason == "stop"
    assert [s.reason for s in sess.segments] == ["first call"]
    _assert_chain(spy, sess)
    (rollout,) = sess.rollouts()
    view = rollout.token_view()
    assert rollout.prompt_ids + view["completion_ids"] == spy.prompts[-1] + sess.calls[-1].completion_ids
    assert len(view["logprobs"]) == len(view["completion_ids"]) == len(view["env_mask"])
    assert rollout.turns[0].env_messages[0]["role"] == "tool" and rollout.turns[0].bridge_ids
    assert rollout.token_exact and rollout.proxy.segment_reason == "first call"


def test_reply_echo_tolerates_dropped_reasoning_and_whitespace(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("Hello there."), scripts.text("Fine.")])
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="m", messages=msgs)
    msgs += [
        {"role": "assistant", "content": first.choices[0].message.content + "\n"},
        {"role": "user", "content": "ok?"},
    ]
    client.chat.completions.create(model="m", messages=msgs)
    assert len(sess.segments) == 1
    _assert_chain(spy, sess)


@pytest.mark.parametrize(
    "rewrite, reason",
    [
        (
            lambda m: [{"role": "user", "content": "something else"}] + m[1:],
            "history rewritten at message 0: content differs",
        ),
        (
            lambda m: m[:1] + [{"role": "assistant", "content": "I edited this."}] + m[2:],
            "history rewritten at message 1: assistant content differs from what the proxy returned",
        ),
        (
            lambda m: [{"role": "system", "content": "Summary: the user said hi."}] + m[2:],
            "history rewritten at message 0: role differs",
        ),
    ],
)
def test_history_rewrite_starts_a_new_segment_with_its_reason(scripted_proxy, scripts, rewrite, reason):
    proxy, spy = scripted_proxy([scripts.text("Hello there."), scripts.text("Again.")])
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="m", messages=msgs)
    msgs += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "more"}]
    client.chat.completions.create(model="m", messages=rewrite(msgs))
    assert [s.reason for s in sess.segments] == ["first call", reason]
    rollouts = sess.rollouts()
    assert len(rollouts) == 2 and rollouts[1].proxy.segment_reason == reason
    # the new segment is a fresh render: its prompt is exactly what the engine saw, no reused ids
    assert rollouts[1].prompt_ids == spy.prompts[1] and sess.calls[1].reused_len == 0


def test_changed_tools_start_a_new_segment(scripted_proxy, scripts, tools):
    proxy, _ = scripted_proxy([scripts.text("a"), scripts.text("b")])
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="m", messages=msgs, tools=tools)
    msgs += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "x"}]
    client.chat.completions.create(model="m", messages=msgs)
    assert sess.segments[1].reason == "tools or chat_template_kwargs changed"


def test_two_continuations_of_one_call_branch(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("a"), scripts.text("b"), scripts.text("c")])
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="m", messages=msgs)
    base = msgs + [{"role": "assistant", "content": first.choices[0].message.content}]
    client.chat.completions.create(model="m", messages=base + [{"role": "user", "content": "one"}])
    client.chat.completions.create(model="m", messages=base + [{"role": "user", "content": "two"}])
    assert sess.segments[1].reason == "branched: call 0 was already continued by call 1"
    branch = sess.rollouts()[1]
    # the branch reuses call 0's exact ids (sampled ids included) as its prompt
    assert branch.prompt_ids == spy.prompts[2]
    assert spy.prompts[2][: len(spy.prompts[0]) + 2] == spy.prompts[0] + sess.calls[0].completion_ids


def test_management_api_create_get_close(scripted_proxy, scripts):
    import httpx

    proxy, _ = scripted_proxy([scripts.text("a")])
    created = httpx.post(
        f"{proxy.base_url}/sessions", json={"session_id": "job-1", "metadata": {"task_id": "t1"}}
    ).json()
    assert created == {"session_id": "job-1", "base_url": f"{proxy.base_url}/sessions/job-1/v1"}
    openai.OpenAI(base_url=created["base_url"], api_key="x").chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    got = httpx.get(f"{proxy.base_url}/sessions/job-1").json()
    assert got["calls"][0]["completion_ids"] == proxy.get_session("job-1").calls[0].completion_ids
    assert got["segments"][0]["reason"] == "first call"
    rollouts = httpx.get(f"{proxy.base_url}/sessions/job-1/rollouts").json()
    assert rollouts[0]["task_id"] == "t1" and rollouts[0]["turns"][0]["message"]["content"] == "a"
    closed = httpx.delete(f"{proxy.base_url}/sessions/job-1").json()
    assert closed["closed"] and len(closed["rollouts"]) == 1
    again = httpx.get(f"{proxy.base_url}/sessions/job-1")
    assert again.status_code == 404 and "closed" in again.json()["error"]["message"]


def test_idle_sessions_expire(scripted_proxy, scripts):
    import time

    import httpx

    proxy, _ = scripted_proxy([scripts.text("a")], idle_timeout_s=0.2)
    sess = proxy.session()
    time.sleep(1.3)
    resp = httpx.get(f"{proxy.base_url}/sessions/{sess.id}")
    assert resp.status_code == 404 and "expired" in resp.json()["error"]["message"]


def test_completions_route_records_raw_prompt(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("Paris"), scripts.text("Rome")])
    sess = proxy.session()
    client = openai.OpenAI(base_url=sess.base_url, api_key="x")
    out = client.completions.create(model="m", prompt="Capital of France:")
    assert out.choices[0].text == "Paris" and out.usage.completion_tokens == len(sess.calls[0].completion_ids)
    assert spy.prompts[0] == proxy.core.tokenizer.encode("Capital of France:")
    assert sess.segments[0].reason.startswith("completions call")
    ids = proxy.core.tokenizer.encode("Capital of Italy:")
    chunks = list(client.completions.create(model="m", prompt=ids, stream=True))  # token-id prompts are exact
    assert "".join(c.choices[0].text for c in chunks) == "Rome" and chunks[-1].choices[0].finish_reason == "stop"
    assert spy.prompts[1] == ids and len(sess.segments) == 2


def test_models_route(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([])
    sess = proxy.session()
    models = openai.OpenAI(base_url=sess.base_url, api_key="x").models.list()
    assert [m.id for m in models.data] == ["scripted"]


def test_streamed_tool_calls_parse_with_the_openai_stream_helper(scripted_proxy, scripts, tools):
    proxy, spy = scripted_proxy([scripts.call("add", a=2, b=2), scripts.text("4")])
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "2+2?"}]
    with client.chat.completions.stream(model="m", messages=msgs, tools=tools) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls[0].function.name == "add"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"a": 2, "b": 2}
    assert choice.message.tool_calls[0].id == sess.calls[0].reply["tool_calls"][0]["id"]
    msgs += [
        {
            "role": "assistant",
            "content": choice.message.content,
            "tool_calls": [c.model_dump() for c in choice.message.tool_calls],
        },
        {"role": "tool", "tool_call_id": choice.message.tool_calls[0].id, "content": "4"},
    ]
    client.chat.completions.create(model="m", messages=msgs, tools=tools)
    assert len(sess.segments) == 1
    _assert_chain(spy, sess)


@pytest.mark.parametrize("truncation", ["close", "end"])
def test_a_cut_reply_is_closed_and_continued_by_default(scripted_proxy, scripts, ptok, truncation):
    """An agent that goes on after a reply cut at max_tokens: under 'close' (the proxy's default) the next call
    continues the segment, the turn's end token entering as a masked bridge id; under 'end' a segment starts."""
    proxy, spy = scripted_proxy(
        [scripts.text("one two three four five six"), scripts.text("ok")],
        **({} if truncation == "close" else {"truncation": "end"}),
    )
    sess = proxy.session()
    client = _client(sess)
    msgs = [{"role": "user", "content": "Count."}]
    first = client.chat.completions.create(model="m", messages=msgs, max_tokens=3)
    assert first.choices[0].finish_reason == "length"
    msgs += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "Go on."}]
    client.chat.completions.create(model="m", messages=msgs)
    if truncation == "end":
        assert [s.reason for s in sess.segments][1].endswith("its trajectory ended (truncated)")
        return
    assert [s.reason for s in sess.segments] == ["first call"]
    _assert_chain(spy, sess)
    assert sess.calls[1].bridge_ids[0] == ptok.end_of_turn_id  # closes the cut turn; never sampled
    (rollout,) = sess.rollouts()
    view = rollout.token_view()
    closing = len(sess.calls[0].completion_ids)
    assert view["completion_ids"][closing] == ptok.end_of_turn_id and view["env_mask"][closing] == 0
    assert rollout.token_exact


def test_proxy_seed_makes_unseeded_calls_reproducible(ptok):
    """`ProxySettings.seed`: a call without a seed is sampled with one derived from (seed, session, call index), so a
    rerun of the same session samples the same ids with the real model; a request's own seed wins."""
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.proxy import ProxySettings, RecordingProxy
    from rollgym.rollouts.policy import Policy

    seen = []

    def script(prompt, sampling):
        seen.append(sampling.seed)
        return ptok.encode("ok") + [ptok.end_of_turn_id]

    def run(seed):
        proxy = RecordingProxy(Policy(engine=ScriptedEngine(script), tokenizer=ptok), settings=ProxySettings(seed=seed))
        with proxy.in_thread():
            client = _client(proxy.session("s1"))
            msgs = [{"role": "user", "content": "hi"}]
            for extra in ({}, {}, {"seed": 7}):
                out = client.chat.completions.create(model="m", messages=msgs, **extra)
                msgs += [out.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "again"}]
        return seen[-3:]

    first, again, unseeded = run(11), run(11), run(None)
    assert first == again and first[0] != first[1] and first[2] == 7
    assert unseeded == [None, None, 7]
