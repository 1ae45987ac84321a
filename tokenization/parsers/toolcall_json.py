"""NVIDIA Nemotron tool calls: a JSON list inside one tag, `<TOOLCALL>[{"name": ..., "arguments": {...}}, ...]</TOOLCALL>`."""

from __future__ import annotations

import json

from rollgym.tokenization.parsers.base import ParsedToolCalls, delimited_items, json_value
from rollgym.tokenization.parsers.hermes import json_call

BLOCK = ("<TOOLCALL>", "</TOOLCALL>")


def json_call_list(body: str, first_index: int, result: ParsedToolCalls, what: str, **call_keys) -> int:
    """Add each call of a JSON list of call objects to `result` (a lone object counts as a list of one);
    return the index after the last. `call_keys` name the object's fields (`json_call`'s keywords)."""
    ok, calls = json_value(body, first_index, result, what)
    if not ok:
        return first_index + 1
    index = first_index
    for obj in calls if isinstance(calls, list) else [calls]:
        call, err = json_call(obj, json.dumps(obj, ensure_ascii=False), index, **call_keys)
        if err:
            result.errors.append(err)
        else:
            assert call is not None  # json_call returns a call or an error
            result.add(*call, obj.get("id") if isinstance(obj.get("id"), str) else None)
        index += 1
    return index


class ToolCallJSONParser:
    """Parser for a JSON list of `{"name", "arguments"}` objects in `<TOOLCALL>` tags (Nemotron Nano v2, Llama-Nemotron)."""

    name = "toolcall_json"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, blocks = delimited_items(text, None, BLOCK)
        index = 0
        for _, body in blocks:
            index = json_call_list(body, index, result, "the <TOOLCALL> list")
        return result
