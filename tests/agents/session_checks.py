"""Checks on what an agent CLI sent through the proxy: the request bodies as they arrived (captured in front of the
proxy's app), the texts in them for each of the three APIs, and a session's calls chaining exactly (ids the model saw
and sampled, plus bridge ids), token-exact, with messages recorded as sent."""

from __future__ import annotations

import json
import re

ROUTES = ("/chat/completions", "/messages", "/responses")


class BodyCapture:
    """An ASGI middleware in front of the proxy's app: the JSON body of every model request, as it arrived."""

    def __init__(self, app) -> None:
        self.app, self.bodies = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith(ROUTES):
            return await self.app(scope, receive, send)
        chunks, messages = [], []
        while True:
            message = await receive()
            messages.append(message)
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        self.bodies.append((scope["path"], json.loads(b"".join(chunks) or b"{}")))
        replay = iter(messages)

        async def receive_again():  # the body again, then the real channel (a streaming reply waits on it)
            return next(replay, None) or await receive()

        return await self.app(scope, receive_again, send)


def _canon_args(args) -> str:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args
    return json.dumps(args, sort_keys=True)


def _parts_text(content) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    out = []
    for part in content:
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            out.append(part["text"])
        elif kind == "tool_use":
            out.append(part["name"] + _canon_args(part["input"]))
        elif kind == "tool_result":
            out += _parts_text(part.get("content"))
    return out


def sent_texts(path: str, body: dict) -> list[str]:
    """Every text, tool call and tool result an agent sent, in order, from the raw body of any of the three APIs."""
    if path.endswith("/messages"):
        system = body.get("system")
        out = _parts_text(system)
        for m in body["messages"]:
            out += _parts_text(m["content"])
        return out
    if path.endswith("/responses"):
        out = [body["instructions"]] if body.get("instructions") else []
        items = [{"type": "message", "content": body["input"]}] if isinstance(body["input"], str) else body["input"]
        for item in items:
            kind = item.get("type", "message")
            if kind == "message":
                out += _parts_text(item["content"])
            elif kind == "function_call":
                out.append(item["name"] + _canon_args(item["arguments"]))
            elif kind == "function_call_output":
                out += _parts_text(item["output"])
        return out
    return recorded_texts(body["messages"])


def recorded_texts(messages: list[dict]) -> list[str]:
    """The same, from chat messages (what the proxy recorded for a call)."""
    out = []
    for m in messages:
        out += _parts_text(m.get("content"))
        out += [c["function"]["name"] + _canon_args(c["function"]["arguments"]) for c in m.get("tool_calls") or []]
    return out


def _squash(texts: list[str]) -> str:
    return re.sub(r"\s+", "", "".join(texts))


def check_session(sess, spy, capture, start: int, captured_from: int, route: str) -> None:
    """Two calls or more of one conversation, each extending the last exactly; token-exact; messages as sent."""
    calls = sess.calls
    assert len(calls) >= 2 and not sess.errors, (len(calls), sess.errors)
    assert max(len(seg.calls) for seg in sess.segments) >= 2, [(s.reason, s.calls) for s in sess.segments]
    prompts = spy.prompts[start:]
    assert len(prompts) == len(calls)
    for seg in sess.segments:
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            assert prompts[b] == prompts[a] + calls[a].completion_ids + calls[b].bridge_ids
    for seg, rollout in zip(sess.segments, sess.rollouts(), strict=True):
        view, last = rollout.token_view(), seg.calls[-1]
        assert rollout.token_exact and rollout.error is None and rollout.prompt_ids == prompts[seg.calls[0]]
        assert view["prompt_ids"] + view["completion_ids"] == prompts[last] + calls[last].completion_ids
        assert len(view["logprobs"]) == len(view["completion_ids"]) == len(view["env_mask"])
        assert sum(view["env_mask"]) == sum(len(calls[i].completion_ids) for i in seg.calls)  # sampled ids only
    bodies = capture.bodies[captured_from:]
    assert [p.endswith(route) for p, _ in bodies] == [True] * len(calls), [p for p, _ in bodies]
    for call, (path, body) in zip(calls, bodies, strict=True):
        assert _squash(recorded_texts(call.request_messages)) == _squash(sent_texts(path, body))
