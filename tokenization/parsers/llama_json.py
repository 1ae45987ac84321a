"""Llama 3.1 tool calls: a bare JSON object `{"name": ..., "parameters": {...}}` (optionally after `<|python_tag|>`)."""

from __future__ import annotations

import json

from rollgym.tokenization.parsers.base import ParsedToolCalls
from rollgym.tokenization.parsers.hermes import parse_json_call


class LlamaJSONParser:
    """Parser for Llama 3.1's JSON tool calls; several calls may be separated by ';'."""

    name = "llama_json"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        body = text.strip()
        if body.startswith("<|python_tag|>"):
            body = body[len("<|python_tag|>") :].strip()
        if not body.startswith("{") or '"name"' not in body:
            return ParsedToolCalls(content=text.strip())
        result = ParsedToolCalls(content="")
        decoder = json.JSONDecoder()
        pos, index = 0, 0
        while pos < len(body):
            try:
                _, end = decoder.raw_decode(body, pos)
                piece = body[pos:end]
            except (ValueError, RecursionError):  # bad JSON, a huge integer, deep nesting: reported below
                piece, end = body[pos:], len(body)
            call, err = parse_json_call(piece, index, args_keys=("parameters", "arguments"))
            if err:
                result.errors.append(err)
            else:
                assert call is not None  # parse_json_call returns a call or an error
                result.calls.append(call)
            index += 1
            pos = end
            while pos < len(body) and body[pos] in "; \n\t":
                pos += 1
        return result
