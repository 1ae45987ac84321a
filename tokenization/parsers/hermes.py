"""Hermes / Qwen2.5 / Qwen3 tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`."""

from __future__ import annotations

import re

from rollgym.tokenization.parsers.base import ParsedToolCalls, ToolCallParseError, load_json, snippet, tool_call_blocks


def parse_json_call(body: str, index: int, args_keys=("arguments", "parameters")):
    """Parse one JSON tool call object; return ((name, args), None) or (None, error)."""
    obj, problem = load_json(body)
    if problem:
        return None, ToolCallParseError(
            index=index, raw=body, message=f"tool call is not valid JSON ({problem}): {snippet(body)}"
        )
    return json_call(obj, body, index, args_keys)


def json_call(obj, raw: str, index: int, args_keys=("arguments", "parameters"), name_key: str = "name"):
    """A parsed JSON call object as ((name, args), None), or (None, error) saying what is wrong with it."""
    if not isinstance(obj, dict):
        return None, ToolCallParseError(
            index=index, raw=raw, message=f"tool call must be a JSON object with '{name_key}' and '{args_keys[0]}'"
        )
    name = obj.get(name_key)
    if not isinstance(name, str) or not name:
        return None, ToolCallParseError(index=index, raw=raw, message=f"tool call has no '{name_key}' string")
    args = next((obj[k] for k in args_keys if k in obj), {})
    if isinstance(args, str):
        args, problem = load_json(args) if args.strip() else ({}, None)
        if problem:
            return None, ToolCallParseError(
                index=index, raw=raw, message=f"'{args_keys[0]}' of {name} is a string that is not JSON ({problem})"
            )
    if not isinstance(args, dict):
        return None, ToolCallParseError(
            index=index, raw=raw, message=f"'{args_keys[0]}' of {name} must be a JSON object, got {type(args).__name__}"
        )
    return (name, args), None


class HermesParser:
    """Parser for JSON objects inside `<tool_call>` tags (Hermes, Qwen2.5, Qwen3)."""

    name = "hermes"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, blocks = tool_call_blocks(text)
        for index, body in blocks:
            call, err = parse_json_call(body.strip(), index)
            if err:
                result.errors.append(err)
            else:
                assert call is not None  # parse_json_call returns a call or an error
                result.calls.append(call)
        return result


_JSON_ESCAPES = set('"\\/bfnrtu')


def double_stray_backslashes(text: str) -> str:
    """`text` with each backslash that starts no JSON escape (`\\1`, `\\s`, `\\.`, as shell and regex write them)
    doubled, so JSON reads it as the literal backslash the model meant."""
    return re.sub(r"\\(.)", lambda m: m[0] if m[1] in _JSON_ESCAPES else "\\\\" + m[1], text, flags=re.S)


class HermesOrBareJSONParser(HermesParser):
    """Hermes calls, and also a reply that is only a bare JSON call (`{"name": ..., "arguments": {...}}`, no tags), as
    Qwen2.5-Coder's small models write them; a model's own choice (`tool_parser="hermes_or_json"`), never detected.
    A call JSON refuses only for a stray backslash (`sed 's/x/\\1/'` inside a string) is read with that backslash
    literal, as the model meant it; the sampled ids are kept as they are either way."""

    name = "hermes_or_json"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result = self._parse(text, tools)
        if not any("Invalid \\escape" in e.message for e in result.errors):
            return result
        again = self._parse(double_stray_backslashes(text), tools)
        if len(again.calls) <= len(result.calls):
            return result
        again.content = result.content
        return again

    def _parse(self, text: str, tools: list[dict] | None) -> ParsedToolCalls:
        if "<tool_call>" in text:
            return super().parse(text, tools)
        from rollgym.tokenization.parsers.llama_json import LlamaJSONParser  # it imports this module

        body = text.strip()
        if not body.startswith("{") or '"name"' not in body:
            return super().parse(text, tools)
        result = LlamaJSONParser().parse(body, tools)  # a call cut short or malformed is an error, as a tagged one is
        return result if result.calls or result.errors else super().parse(text, tools)
