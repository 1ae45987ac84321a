"""OpenAI Responses through the proxy, driven by the official `openai` client: same token-exact records."""

from __future__ import annotations

import httpx
import openai
import pytest

ADD = {
    "type": "function",
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
HOSTED = [{"type": "web_search"}, {"type": "namespace", "name": "multi_agent_v1", "tools": []}]
DEV = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add 1 and 2."}]}


def _client(sess) -> openai.OpenAI:
    return openai.OpenAI(base_url=sess.base_url, api_key="unused", max_retries=0)


def _assert_chain(spy, sess):
    for seg in sess.segments:
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            prev, nxt = sess.calls[a], sess.calls[b]
            assert spy.prompts[b] == spy.prompts[a] + prev.completion_ids + nxt.bridge_ids


def test_plain_text_with_instructions(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("Hello there.")])
    sess = proxy.session()
    resp = _client(sess).responses.create(model="m", instructions="Be brief.", input="hi", max_output_tokens=50)
    assert resp.object == "response" and resp.status == "completed" and resp.output_text == "Hello there."
    assert resp.output[0].type == "message" and resp.output[0].content[0].type == "output_text"
    assert resp.usage.input_tokens == len(spy.prompts[0])
    assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens
    assert sess.calls[0].request_messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert sess.calls[0].sampling["max_tokens"] == 50


def test_function_call_then_output_continue_one_segment(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.call("add", a=1, b=2), scripts.text("It is 3.")])
    sess = proxy.session()
    client = _client(sess)
    items = [DEV, USER]
    first = client.responses.create(
        model="m",
        input=items,
        tools=[ADD, *HOSTED],
        store=False,
        reasoning={"summary": "auto"},
        include=["reasoning.encrypted_content"],
    )
    (fc,) = [o for o in first.output if o.type == "function_call"]
    assert fc.name == "add" and fc.call_id and '"a": 1' in fc.arguments
    assert [w for w in sess.calls[0].warnings if "dropped tool" in w] and len(sess.calls[0].warnings) == 2
    items = (
        items
        + [o.model_dump(exclude_none=True) for o in first.output]
        + [{"type": "function_call_output", "call_id": fc.call_id, "output": "3"}]
    )
    second = client.responses.create(model="m", input=items, tools=[ADD, *HOSTED], store=False)
    assert second.output_text == "It is 3."
    assert [s.calls for s in sess.segments] == [[0, 1]]
    _assert_chain(spy, sess)
    assert sess.calls[1].new_messages == [{"role": "tool", "tool_call_id": fc.call_id, "content": "3"}]
    assert sess.responses == {}  # store: false keeps no state


def test_streaming_events(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.call("add", a=4, b=5), scripts.text("Nine, " * 30)])
    sess = proxy.session()
    client = _client(sess)
    events = list(client.responses.create(model="m", input=[USER], tools=[ADD], stream=True))
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds
    assert kinds[-2:] == ["response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    done = events[-1].response
    assert done.usage.output_tokens == len(sess.calls[0].completion_ids)
    fc = done.output[0]
    items = [
        USER,
        fc.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": fc.call_id, "output": "9"},
    ]
    with client.responses.stream(model="m", input=items, tools=[ADD]) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert final.output_text == "Nine, " * 30 or final.output_text == ("Nine, " * 30).strip()
    assert kinds.count("response.output_text.delta") > 1 and "response.content_part.done" in kinds
    assert [s.calls for s in sess.segments] == [[0, 1]]


def test_previous_response_id(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.call("add", a=1, b=2), scripts.text("3")])
    sess = proxy.session()
    client = _client(sess)
    first = client.responses.create(model="m", instructions="Be brief.", input=[USER], tools=[ADD])
    fc = first.output[0]
    second = client.responses.create(
        model="m",
        instructions="Be brief.",
        previous_response_id=first.id,
        tools=[ADD],
        input=[{"type": "function_call_output", "call_id": fc.call_id, "output": "3"}],
    )
    assert second.output_text == "3" and second.previous_response_id == first.id
    assert [s.calls for s in sess.segments] == [[0, 1]]
    _assert_chain(spy, sess)
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="m", previous_response_id="resp_nope", input="hi")
    assert info.value.body["code"] == "previous_response_not_found" and "resp_nope" in info.value.body["message"]
    other = proxy.session()  # a response of another session is unknown here
    with pytest.raises(openai.BadRequestError):
        _client(other).responses.create(model="m", previous_response_id=first.id, input="hi")


@pytest.mark.parametrize(
    "body, param",
    [
        ({"model": "m"}, "input"),
        ({"model": "m", "input": 5}, "input"),
        ({"model": "m", "input": [{"type": "item_reference", "id": "x"}]}, "input.0.type"),
        ({"model": "m", "input": [{"role": "wizard", "content": "x"}]}, "input.0.message.role"),
        (
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            "input.0.content.0",
        ),
        ({"model": "m", "input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": "m", "input": "hi", "text": {"format": {"type": "json_object"}}}, "text.format"),
        (
            {"model": "m", "input": [{"type": "function_call_output", "output": "x"}]},
            "input.0.function_call_output.call_id",
        ),
    ],
)
def test_malformed_requests_are_400(scripted_proxy, scripts, body, param):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    resp = httpx.post(f"{sess.base_url}/responses", json=body)
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param, err
    assert sess.calls == []


def test_real_model_streamed(real_proxy):
    proxy, spy = real_proxy
    sess = proxy.session()
    client = _client(sess)
    first = client.responses.create(model="m", input="Say hi.", max_output_tokens=8)
    with client.responses.stream(model="m", previous_response_id=first.id, input="Again.", max_output_tokens=8) as s:
        s.get_final_response()
    calls = sess.calls
    assert len(calls) == 2 and first.usage.output_tokens == len(calls[0].completion_ids)
    if calls[0].finish_reason != "length":
        assert [s.calls for s in sess.segments] == [[0, 1]]
    else:
        assert first.status == "incomplete" and first.incomplete_details.reason == "max_output_tokens"


def test_codex_shaped_conversation_continues_one_segment(scripted_proxy, scripts):
    """Codex 0.169's body (captured): developer/user items with ids, hosted tools, store false, stream; it builds
    the next input from `response.output_item.done` events only and echoes the items verbatim."""
    import json

    proxy, spy = scripted_proxy([scripts.call("exec_command", cmd="echo hi"), scripts.text("done")], api_key="k")
    sess = proxy.session()
    exec_command = {
        "type": "function",
        "name": "exec_command",
        "description": "Run a command.",
        "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    }
    body = {
        "model": "fake-model",
        "instructions": None,
        "stream": True,
        "store": False,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "thread-1",
        "client_metadata": {"turn": "{}"},
        "tools": [exec_command, {"type": "namespace", "name": "multi_agent_v1", "tools": []}, {"type": "web_search"}],
        "input": [
            {
                "type": "message",
                "id": "msg_dev",
                "role": "developer",
                "content": [{"type": "input_text", "text": "You are Codex."}],
            },
            {
                "type": "message",
                "id": "msg_user",
                "role": "user",
                "content": [{"type": "input_text", "text": "Run echo hi, then say done."}],
            },
        ],
    }
    body.pop("instructions")
    headers = {"authorization": "Bearer k"}

    def done_items(text: str) -> list[dict]:
        events = [json.loads(chunk.split("\ndata: ", 1)[1]) for chunk in text.strip().split("\n\n")]
        assert events[-1]["type"] == "response.completed"
        return [e["item"] for e in events if e["type"] == "response.output_item.done"]

    first = done_items(httpx.post(f"{sess.base_url}/responses", json=body, headers=headers).text)
    assert [i["type"] for i in first] == ["function_call"] and json.loads(first[0]["arguments"]) == {"cmd": "echo hi"}
    body["input"] += first + [
        {
            "type": "function_call_output",
            "id": "fco_1",
            "call_id": first[0]["call_id"],
            "output": "Chunk ID: 1\nWall time: 0.01s\nOutput:\nhi\n",
        }
    ]
    second = done_items(httpx.post(f"{sess.base_url}/responses", json=body, headers=headers).text)
    assert second[0]["content"][0]["text"] == "done"
    assert [s.calls for s in sess.segments] == [[0, 1]]
    _assert_chain(spy, sess)
    assert sess.calls[0].request_messages[0] == {"role": "system", "content": "You are Codex."}
    assert len(sess.calls[1].warnings) == 2 and sess.responses == {}


def test_a_namespace_tools_functions_are_offered_by_full_name_and_called_back_by_name_and_namespace(
    scripted_proxy, scripts
):
    """Codex 0.169 sends each MCP server's tools as one `namespace` tool (`mcp__SERVER`, its functions by their own
    names) and runs a call only with its `namespace`: the model sees `mcp__plain__where`, Codex gets `name` `where`
    with `namespace` `mcp__plain`, and the call echoed back renders as the model sampled it (one segment)."""
    proxy, spy = scripted_proxy([scripts.call("mcp__plain__where"), scripts.text("done")])
    sess = proxy.session()
    where = {"type": "function", "name": "where", "description": "Where it runs.", "strict": False}
    where["parameters"] = {"type": "object", "properties": {}}
    tools = [ADD, {"type": "namespace", "name": "mcp__plain", "description": "plain", "tools": [where]}]
    body = {"model": "m", "input": [USER], "tools": tools, "store": False}
    first = httpx.post(f"{sess.base_url}/responses", json=body).json()["output"]
    (call,) = [o for o in first if o["type"] == "function_call"]
    assert (call["name"], call["namespace"]) == ("where", "mcp__plain")
    assert [t["function"]["name"] for t in sess.rollouts()[0].tools] == ["add", "mcp__plain__where"]
    assert not sess.calls[0].warnings
    body["input"] = [USER, call, {"type": "function_call_output", "call_id": call["call_id"], "output": "here"}]
    assert httpx.post(f"{sess.base_url}/responses", json=body).json()["output"][0]["content"][0]["text"] == "done"
    assert [s.calls for s in sess.segments] == [[0, 1]]
    assert sess.calls[1].request_messages[1]["tool_calls"][0]["function"]["name"] == "mcp__plain__where"
    _assert_chain(spy, sess)
