"""The tool-call parser contract and its result types."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel


class ToolCallParseError(BaseModel):
    """One malformed tool call: shown to the model so it can correct itself."""

    index: int
    raw: str
    message: str


@dataclass(slots=True)
class ParsedToolCalls:
    """What a parser found in the visible (non-reasoning) text of a completion (made once per turn).

    `call_ids` holds the ids the model wrote for its calls, where its format has them (Kimi K2's
    `functions.NAME:0`, Mistral's `[CALL_ID]`); `extra` holds message fields a family's template reads
    besides the OpenAI ones (Cohere's `tool_plan`)."""

    content: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    errors: list[ToolCallParseError] = field(default_factory=list)
    call_ids: list[str | None] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, arguments: dict[str, Any], call_id: str | None = None) -> None:
        """Record one well-formed call (and the id the model gave it, if any)."""
        self.call_ids.extend([None] * (len(self.calls) - len(self.call_ids)))
        self.calls.append((name, arguments))
        self.call_ids.append(call_id)

    def fail(self, index: int, raw: str, message: str) -> None:
        """Record one malformed call: shown to the model, never raised."""
        self.errors.append(ToolCallParseError(index=index, raw=raw, message=message))


class ToolCallParser(Protocol):
    """Extracts tool calls in one model family's format from completion text."""

    name: str

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls: ...


def tool_param_types(tools: list[dict] | None, name: str) -> dict[str, str]:
    """Map parameter name -> JSON-schema type for tool `name` (empty when unknown)."""
    for tool in tools or []:
        fn = tool.get("function", tool)
        if fn.get("name") == name:
            props = (fn.get("parameters") or {}).get("properties") or {}
            return {k: v.get("type", "string") if isinstance(v, dict) else "string" for k, v in props.items()}
    return {}


def coerce_text_value(raw: str, json_type: str | None) -> Any:
    """Turn a textual argument value into a JSON value, guided by the schema type when known.

    XML-style formats (Qwen3.5, GLM-4) write strings bare and other values as JSON; without a
    schema, valid JSON is taken as JSON, anything else as a string.
    """
    if json_type == "string":
        return raw
    if json_type == "boolean" and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"  # templates that use Jinja's `string` filter write True/False
    value, problem = load_json(raw)
    return raw if problem else value


def load_json(text: str) -> tuple[Any, str | None]:
    """`json.loads(text)`, or (None, why) for anything Python's parser refuses: bad JSON, an integer
    over Python's 4,300-digit limit, nesting too deep to recurse. A model can write all three, so none
    may end a rollout: the caller tells the model what was wrong."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at char {exc.pos}"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        return None, str(exc).split(";")[0]


def snippet(text: str, limit: int = 200) -> str:
    """Shorten `text` for an error message."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def tool_call_blocks(text: str) -> tuple[ParsedToolCalls, list[tuple[int, str]]]:
    """Split text into the content before the first `<tool_call>` and the bodies of the call blocks.

    Returns a result holding the content (and an error for an unterminated last block) and the
    (index, body) pairs for the format-specific parser to read. A body runs to the first
    `</tool_call>` after its `<tool_call>`.
    """
    start = text.find(_OPEN)
    if start < 0:
        return ParsedToolCalls(content=text.strip()), []
    result = ParsedToolCalls(content=text[:start].strip())
    blocks = []
    index = 0
    while start >= 0:
        body_start = start + len(_OPEN)
        end = text.find(_CLOSE, body_start)
        if end < 0:
            raw = text[body_start:].removesuffix("\n")
            result.errors.append(
                ToolCallParseError(index=index, raw=raw, message="unterminated <tool_call>: missing </tool_call>")
            )
            break
        blocks.append((index, text[body_start:end]))
        index += 1
        start = text.find(_OPEN, end + len(_CLOSE))
    return result, blocks


def delimited_items(
    text: str, section: tuple[str, str] | None, item: tuple[str, str]
) -> tuple[ParsedToolCalls, list[tuple[int, str]]]:
    """Split `text` into the content before the first call and the bodies of its `item` blocks.

    With a `section` (Kimi K2's `<|tool_calls_section_begin|>`, DeepSeek's `<｜tool▁calls▁begin｜>`), the calls
    are the items inside it; text between or after items, and unterminated items or sections, are errors
    the model is told about. Without one, every item block in the text is a call.
    """
    opener = section[0] if section else item[0]
    start = text.find(opener)
    if start < 0:
        return ParsedToolCalls(content=text.strip()), []
    result = ParsedToolCalls(content=text[:start].strip())
    body, tail = text[start:], ""
    if section:
        body = body[len(section[0]) :]
        end = body.find(section[1])
        if end < 0:
            result.fail(0, body, f"unterminated tool-call section: missing {section[1]}")
            return result, []
        body, tail = body[:end], body[end + len(section[1]) :]
    items, pos, index = [], 0, 0
    while True:
        at = body.find(item[0], pos)
        stray = body[pos : at if at >= 0 else len(body)].strip()
        if stray and section:
            result.fail(index, stray, f"unexpected text between tool calls: {snippet(stray)}")
        if at < 0:
            break
        inner = at + len(item[0])
        end = body.find(item[1], inner)
        if end < 0:
            result.fail(index, body[inner:], f"unterminated tool call: missing {item[1]}")
            break
        items.append((index, body[inner:end]))
        index, pos = index + 1, end + len(item[1])
    if tail.strip():
        result.fail(index, tail.strip(), f"unexpected text after the tool calls: {snippet(tail.strip())}")
    return result, items


def json_value(body: str, index: int, result: ParsedToolCalls, what: str) -> tuple[bool, Any]:
    """`body` as JSON, or (False, None) with an error naming `what` when it is not."""
    value, problem = load_json(body)
    if problem:
        result.fail(index, body, f"{what} is not valid JSON ({problem}): {snippet(body)}")
        return False, None
    return True, value


def json_arguments(body: str, index: int, name: str, result: ParsedToolCalls) -> dict[str, Any] | None:
    """A call's arguments: a JSON object (or a string holding one); None with an error otherwise."""
    ok, args = json_value(body.strip() or "{}", index, result, f"the arguments of {name}")
    if ok and isinstance(args, str):
        ok, args = json_value(args.strip() or "{}", index, result, f"the arguments of {name}")
    if ok and not isinstance(args, dict):
        result.fail(index, body, f"the arguments of {name} must be a JSON object, got {type(args).__name__}")
        return None
    return args if ok else None
