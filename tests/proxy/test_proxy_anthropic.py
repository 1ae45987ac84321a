"""Anthropic Messages through the proxy, driven by the official `anthropic` client: same token-exact records."""

from __future__ import annotations

import anthropic
import httpx
import pytest

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
USER = [{"role": "user", "content": "Add 1 and 2."}]


def _base(sess) -> str:
    return sess.base_url.removesuffix("/v1")


def _client(sess, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=_base(sess), api_key=kw.pop("api_key", "unused"), max_retries=0, **kw)


def _assert_chain(spy, sess):
    for seg in sess.segments:
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            prev, nxt = sess.calls[a], sess.calls[b]
            assert spy.prompts[b] == spy.prompts[a] + prev.completion_ids + nxt.bridge_ids


def test_plain_text(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("Hello there.")])
    sess = proxy.session()
    msg = _client(sess).messages.create(
        model="m",
        max_tokens=64,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "hi"}],
        metadata={"user_id": "u"},
    )
    assert msg.type == "message" and msg.role == "assistant" and msg.stop_reason == "end_turn"
    assert [b.type for b in msg.content] == ["text"] and msg.content[0].text == "Hello there."
    assert msg.usage.input_tokens == len(spy.prompts[0]) and msg.usage.output_tokens == len(
        sess.calls[0].completion_ids
    )
    assert sess.calls[0].request_messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert sess.calls[0].sampling["max_tokens"] == 64


def test_tool_use_then_tool_result_continue_one_segment(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.call("add", a=1, b=2), scripts.text("It is 3.")])
    sess = proxy.session()
    client = _client(sess)
    first = client.messages.create(
        model="m", max_tokens=20000, messages=USER, tools=[ADD], tool_choice={"type": "auto"}
    )
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "add" and use.input == {"a": 1, "b": 2} and use.id
    history = USER + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "3", "cache_control": {"type": "ephemeral"}}
            ],
        },
    ]
    second = client.messages.create(model="m", max_tokens=20000, messages=history, tools=[ADD])
    assert second.content[0].text == "It is 3." and second.stop_reason == "end_turn"
    assert [s.calls for s in sess.segments] == [[0, 1]] and sess.segments[0].reason == "first call"
    _assert_chain(spy, sess)
    assert sess.calls[1].new_messages == [{"role": "tool", "tool_call_id": use.id, "content": "3"}]
    assert sess.calls[0].sampling["max_tokens"] == proxy.core.settings.default_max_tokens  # 20000 capped
    (rollout,) = sess.rollouts()
    assert rollout.token_exact and len(rollout.turns) == 2


def test_streaming_reassembles_to_the_same_message(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.call("add", a=4, b=5), scripts.text("Nine, " * 30)])
    sess = proxy.session()
    client = _client(sess)
    with client.messages.stream(model="m", max_tokens=100, messages=USER, tools=[ADD]) as stream:
        kinds = [event.type for event in stream]
        tool_msg = stream.get_final_message()
    assert kinds[0] == "message_start" and "content_block_stop" in kinds and kinds[-1] == "message_stop"
    assert tool_msg.stop_reason == "tool_use" and tool_msg.content[0].input == {"a": 4, "b": 5}
    history = USER + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in tool_msg.content]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": tool_msg.content[0].id,
                    "content": [{"type": "text", "text": "9"}],
                }
            ],
        },
    ]
    events = list(client.messages.create(model="m", max_tokens=100, messages=history, tools=[ADD], stream=True))
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    assert text == "Nine, " * 30 or text == ("Nine, " * 30).strip()
    assert sum(e.type == "content_block_delta" for e in events) > 1
    assert [e for e in events if e.type == "message_delta"][0].delta.stop_reason == "end_turn"
    assert [s.calls for s in sess.segments] == [[0, 1]]


def test_raw_sse_has_event_lines_and_ping(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    resp = httpx.post(
        f"{_base(sess)}/v1/messages?beta=true", json={"model": "m", "max_tokens": 10, "stream": True, "messages": USER}
    )
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    names = [line.removeprefix("event: ") for line in resp.text.splitlines() if line.startswith("event: ")]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_system_messages_thinking_and_error_results_map_to_chat(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.call("add", a=1, b=1), scripts.text("done")])
    sess = proxy.session()
    client = _client(sess)
    msgs = USER + [{"role": "system", "content": "Agents available: none."}]
    first = client.messages.create(
        model="m", max_tokens=60, messages=msgs, tools=[ADD, {"type": "web_search_20250305", "name": "web_search"}]
    )
    assert "dropped server tool 'web_search'" in sess.calls[0].warnings[0]
    blocks = [{"type": "thinking", "thinking": "", "signature": "x"}] + [
        b.model_dump(exclude_none=True) for b in first.content
    ]
    msgs += [
        {"role": "assistant", "content": blocks},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": first.content[0].id, "is_error": True, "content": "boom"},
                {"type": "text", "text": "try again"},
            ],
        },
    ]
    client.messages.create(
        model="m", max_tokens=60, messages=msgs, tools=[ADD, {"type": "web_search_20250305", "name": "web_search"}]
    )
    assert sess.calls[0].request_messages[1] == {"role": "system", "content": "Agents available: none."}
    assert sess.calls[1].new_messages == [
        {"role": "tool", "tool_call_id": first.content[0].id, "content": "Error: boom"},
        {"role": "user", "content": "try again"},
    ]
    assert [s.calls for s in sess.segments] == [[0, 1]]
    _assert_chain(spy, sess)


def test_x_api_key_and_anthropic_error_shape(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok"), scripts.text("ok")], api_key="s3cret")
    sess = proxy.session()
    assert (
        _client(sess, api_key="s3cret").messages.create(model="m", max_tokens=5, messages=USER).content[0].text == "ok"
    )
    with pytest.raises(anthropic.AuthenticationError) as info:
        _client(sess, api_key="wrong").messages.create(model="m", max_tokens=5, messages=USER)
    assert info.value.status_code == 401
    assert info.value.body["type"] == "error" and info.value.body["error"]["type"] == "authentication_error"
    bearer = httpx.post(
        f"{_base(sess)}/v1/messages",
        headers={"authorization": "Bearer s3cret"},
        json={"model": "m", "max_tokens": 5, "messages": USER},
    )
    assert bearer.status_code == 200 and bearer.json()["content"] == [{"type": "text", "text": "ok"}]
    with pytest.raises(anthropic.BadRequestError):
        _client(sess, api_key="s3cret").messages.create(model="m", max_tokens=5, messages=[])


@pytest.mark.parametrize(
    "body, where",
    [
        ({"model": "m", "messages": USER}, "max_tokens"),
        ({"model": "m", "max_tokens": "many", "messages": USER}, "max_tokens"),
        ({"model": "m", "max_tokens": 5, "messages": "hi"}, "messages"),
        (
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "video", "url": "x"}]}]},
            "messages.0.content",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}],
            },
            "messages.0.content.0",
        ),
        ({"model": "m", "max_tokens": 5, "messages": USER, "stop_sequences": ["\n\n"]}, "stop_sequences"),
        ({"model": "m", "max_tokens": 5, "messages": USER, "temperature": 3}, "temperature"),
        ({"model": "m", "max_tokens": 5, "messages": USER, "tool_choice": {"type": "any"}}, "tool_choice"),
        ([1], "body"),
    ],
)
def test_malformed_requests_are_400_invalid_request_error(scripted_proxy, scripts, body, where):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    resp = httpx.post(f"{_base(sess)}/v1/messages", json=body)
    assert resp.status_code == 400, resp.text
    err = resp.json()
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert where in err["error"]["message"] and sess.calls == []


def test_unknown_session_is_anthropic_404(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    resp = httpx.post(
        f"{proxy.base_url}/sessions/nope/v1/messages", json={"model": "m", "max_tokens": 5, "messages": USER}
    )
    assert resp.status_code == 404 and resp.json()["error"]["type"] == "not_found_error"


def test_count_tokens_is_the_rendered_prompt_length(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    client = _client(sess)
    counted = client.messages.count_tokens(model="m", system="Be brief.", messages=USER, tools=[ADD])
    client.messages.create(model="m", max_tokens=5, system="Be brief.", messages=USER, tools=[ADD])
    assert counted.input_tokens == len(spy.prompts[0]) and len(sess.calls) == 1


def test_real_model_two_turns(real_proxy):
    proxy, spy = real_proxy
    sess = proxy.session()
    client = _client(sess)
    first = client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "Say hi."}])
    history = [
        {"role": "user", "content": "Say hi."},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": "Again."},
    ]
    with client.messages.stream(model="m", max_tokens=8, messages=history) as stream:
        stream.get_final_message()
    calls = sess.calls
    assert len(calls) == 2 and first.usage.output_tokens == len(calls[0].completion_ids)
    if calls[0].finish_reason != "length":  # a truncated call ends its trajectory
        assert [s.calls for s in sess.segments] == [[0, 1]]
        assert calls[1].reused_len == calls[0].prompt_len + len(calls[0].completion_ids)


def _sse_message(text: str) -> dict:
    """Reassemble a Message from raw SSE (as Claude Code does): blocks from starts and deltas."""
    import json

    message, partial = None, {}
    for chunk in text.strip().split("\n\n"):
        name, data = (line.split(": ", 1)[1] for line in chunk.split("\n"))
        event = json.loads(data)
        assert event["type"] == name
        if name == "message_start":
            message = event["message"]
        elif name == "content_block_start":
            message["content"].append(event["content_block"])
        elif name == "content_block_delta":
            delta, block = event["delta"], message["content"][event["index"]]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            else:
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif name == "content_block_stop" and event["index"] in partial:
            message["content"][event["index"]]["input"] = json.loads(partial.pop(event["index"]))
        elif name == "message_delta":
            message.update(event["delta"])
    return message


def test_claude_code_shaped_conversation_continues_one_segment(scripted_proxy, scripts):
    """Claude Code 2.1's body (captured): system blocks with cache_control, thinking/output_config/... fields,
    stream; the next request moves cache_control to the newest block, which must not break the prefix."""
    proxy, spy = scripted_proxy([scripts.call("Bash", command="echo hi"), scripts.text("done")], api_key="k")
    sess = proxy.session()
    eph = {"type": "ephemeral"}
    bash = {
        "name": "Bash",
        "description": "execute shell commands",
        "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": False,
            "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
            "required": ["command"],
        },
    }
    prompt = [
        {"type": "text", "text": "<system-reminder>\nToday's date is 2026-11-22.\n</system-reminder>\n\n"},
        {"type": "text", "text": "Run echo hi with Bash, then say done.", "cache_control": eph},
    ]
    body = {
        "model": "my-model",
        "messages": [{"role": "user", "content": prompt}],
        "system": [
            {"type": "text", "text": "You are a Claude agent.", "cache_control": eph},
            {"type": "text", "text": "You are a test agent.", "cache_control": eph},
        ],
        "tools": [bash],
        "metadata": {"user_id": '{"session_id": "x"}'},
        "max_tokens": 32000,
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "output_config": {"effort": "high"},
        "stream": True,
    }
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219"}
    url = f"{_base(sess)}/v1/messages?beta=true"
    first = _sse_message(httpx.post(url, json=body, headers=headers).text)
    assert first["stop_reason"] == "tool_use" and first["content"][0]["input"] == {"command": "echo hi"}
    prompt[1].pop("cache_control")
    body["messages"] += [
        {"role": "assistant", "content": first["content"]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": first["content"][0]["id"],
                    "content": "hi",
                    "is_error": False,
                    "cache_control": eph,
                }
            ],
        },
    ]
    second = _sse_message(httpx.post(url, json=body, headers=headers).text)
    assert second["content"] == [{"type": "text", "text": "done"}] and second["stop_reason"] == "end_turn"
    assert [s.calls for s in sess.segments] == [[0, 1]]
    _assert_chain(spy, sess)
    assert sess.calls[0].request_messages[0] == {
        "role": "system",
        "content": "You are a Claude agent.\nYou are a test agent.",
    }


def test_stop_sequence_that_is_a_special_token(scripted_proxy, ptok):
    proxy, _ = scripted_proxy([ptok.encode("abc") + [ptok.hf.get_added_vocab()["<file_sep>"]]])
    sess = proxy.session()
    msg = _client(sess).messages.create(model="m", max_tokens=20, messages=USER, stop_sequences=["<file_sep>"])
    assert msg.stop_reason == "stop_sequence" and msg.stop_sequence == "<file_sep>"
    assert msg.content[0].text.startswith("abc")
