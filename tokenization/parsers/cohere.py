"""Cohere Command-A / R7B: `<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": ...,
"parameters": {...}}]<|END_ACTION|>`, or an answer in `<|START_RESPONSE|>...<|END_RESPONSE|>`."""

from __future__ import annotations

from rollgym.tokenization.parsers.base import ParsedToolCalls, delimited_items
from rollgym.tokenization.parsers.toolcall_json import json_call_list

ACTION = ("<|START_ACTION|>", "<|END_ACTION|>")
RESPONSE = ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
THINKING = ("<|START_THINKING|>", "<|END_THINKING|>")


class CohereParser:
    """Parser for Command's action lists; the answer is the text inside the response tags."""

    name = "cohere"
    reasoning_tags = THINKING
    plan_field = "tool_plan"  # the template shows a tool-call turn's thinking from this field

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, blocks = delimited_items(text, None, ACTION)
        index = 0
        for _, body in blocks:
            index = json_call_list(
                body, index, result, "the action list", args_keys=("parameters", "arguments"), name_key="tool_name"
            )
        content = result.content
        start = content.find(RESPONSE[0])
        if start >= 0:
            end = content.find(RESPONSE[1], start)
            content = content[start + len(RESPONSE[0]) : end if end >= 0 else len(content)]
        result.content = content.strip()
        return result
