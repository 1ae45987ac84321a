"""Kimi K2 tool calls: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{json}
<|tool_call_end|>...<|tool_calls_section_end|>`; the id the model writes (`functions.NAME:IDX`) names the function."""

from __future__ import annotations

import re

from rollgym.tokenization.parsers.base import ParsedToolCalls, delimited_items, json_arguments, snippet

SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
CALL = ("<|tool_call_begin|>", "<|tool_call_end|>")
ARGUMENTS = "<|tool_call_argument_begin|>"
_ID = re.compile(r"^(?:functions\.)?([^\s:]+?)(?::\d+)?$")


class KimiK2Parser:
    """Parser for Kimi K2's sectioned tool calls; the call id is kept as the model wrote it."""

    name = "kimi_k2"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, items = delimited_items(text, SECTION, CALL)
        for index, body in items:
            call_id, sep, raw_args = body.partition(ARGUMENTS)
            match = _ID.match(call_id.strip())
            if not sep or not match:
                result.fail(index, body, f"expected functions.NAME:INDEX{ARGUMENTS}{{json}}, got: {snippet(body)}")
                continue
            args = json_arguments(raw_args, index, match.group(1), result)
            if args is not None:
                result.add(match.group(1), args, call_id.strip())
        return result
