"""Message normalisation and prefix matching: when does a request continue an earlier call exactly?

What counts as equal (documented in README "Recording proxy"):
- roles: `developer` is rendered as `system`; content: a string, or text parts joined with "\\n" (as vLLM does);
  `None` equals "".
- messages the client wrote itself (system/user/tool, and assistant messages the proxy did not return) must
  come back identical: role, content, name, tool_call_id, tool calls and reasoning_content.
- the assistant message the proxy returned may come back with `reasoning_content` dropped, tool-call
  arguments re-serialised (compared as parsed JSON), `content` None/"" and surrounding whitespace changed
  (compared after `strip()`); anything else (other text, other tool-call ids or names) is a rewrite.
"""

from __future__ import annotations

import json
from typing import Any

from rollgym.proxy.error_responses import bad_request, unsupported
from rollgym.proxy.schemas import ChatMessage


def _text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise unsupported(f"messages[{index}].content", f"content part of type {part.type!r}; only text parts are")
        parts.append(part.text)
    return "\n".join(parts)


def _args(arguments: Any) -> Any:
    """Tool-call arguments as parsed JSON when they parse (clients re-serialise them), else the stripped text."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return arguments.strip()
    return arguments


def to_template_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The request's messages as plain OpenAI dicts for the chat template (tool-call arguments as JSON strings)."""
    out = []
    for i, msg in enumerate(messages):
        m: dict[str, Any] = {
            "role": "system" if msg.role == "developer" else msg.role,
            "content": _text(msg.content, i),
        }
        if msg.name is not None:
            m["name"] = msg.name
        if msg.role == "tool":
            if msg.tool_call_id is None:
                raise bad_request(f"messages[{i}]: a tool message needs `tool_call_id`", f"messages[{i}].tool_call_id")
            m["tool_call_id"] = msg.tool_call_id
        if msg.tool_calls:
            if msg.role != "assistant":
                raise bad_request(
                    f"messages[{i}]: only assistant messages have `tool_calls`", f"messages[{i}].tool_calls"
                )
            m["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.function.name,
                        "arguments": c.function.arguments
                        if isinstance(c.function.arguments, str)
                        else json.dumps(c.function.arguments, ensure_ascii=False),
                    },
                }
                for c in msg.tool_calls
            ]
        if msg.reasoning_content is not None:
            m["reasoning_content"] = msg.reasoning_content
        out.append(m)
    return out


def _calls_key(msg: dict) -> tuple:
    return tuple(
        (c.get("id"), c["function"]["name"], json.dumps(_args(c["function"].get("arguments")), sort_keys=True))
        for c in msg.get("tool_calls") or []
    )


def message_key(msg: dict) -> tuple:
    """The strict identity of a message the client wrote (hashable, cheap to compare)."""
    return (
        msg["role"],
        msg.get("content") or "",
        msg.get("name"),
        msg.get("tool_call_id"),
        _calls_key(msg),
        msg.get("reasoning_content") or None,
    )


def reply_difference(returned: dict, sent: dict) -> str | None:
    """How the client's copy of an assistant message the proxy returned differs from it, or None."""
    if sent["role"] != "assistant":
        return f"role differs (expected the assistant reply, got {sent['role']})"
    if (returned.get("content") or "").strip() != (sent.get("content") or "").strip():
        return "assistant content differs from what the proxy returned"
    if _calls_key(returned) != _calls_key(sent):
        return "assistant tool calls differ from what the proxy returned"
    sent_reasoning = sent.get("reasoning_content")
    if sent_reasoning and sent_reasoning.strip() != (returned.get("reasoning_content") or "").strip():
        return "assistant reasoning_content differs from what the proxy returned"
    return None


def key_difference(expected: tuple, got: tuple) -> str:
    """Which field of a client-written message changed."""
    for name, a, b in zip(
        ("role", "content", "name", "tool_call_id", "tool_calls", "reasoning_content"), expected, got, strict=True
    ):
        if a != b:
            return f"{name} differs"
    return "differs"


def explain_mismatch(prompt_keys: list[tuple], reply: dict, request: list[dict], keys: list[tuple]) -> str:
    """Why `request` does not continue a call with these prompt messages and this reply."""
    for i, expected in enumerate(prompt_keys):
        if i >= len(keys):
            return f"history rewritten: the request has {len(keys)} messages, fewer than the previous call's {len(prompt_keys)}"
        if keys[i] != expected:
            return f"history rewritten at message {i}: {key_difference(expected, keys[i])}"
    n = len(prompt_keys)
    if n >= len(request):
        return f"history rewritten: the request stops at message {n}, before the previous call's reply"
    diff = reply_difference(reply, request[n])
    if diff:
        return f"history rewritten at message {n}: {diff}"
    if n + 1 >= len(request):
        return "the request ends with the previous reply; there is nothing new to answer"
    return "no earlier call is a prefix of this request"
