"""DeepSeek tool calls: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>`
(V3.1), or V3/R1's `function<｜tool▁sep｜>NAME` followed by a fenced ```json block."""

from __future__ import annotations

import re

from rollgym.tokenization.parsers.base import ParsedToolCalls, delimited_items, json_arguments, snippet

SECTION = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")
CALL = ("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>")
SEP = "<｜tool▁sep｜>"
_FENCED = re.compile(r"^([^\s]+)\s*\n```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


class DeepSeekParser:
    """Parser for DeepSeek V3.1's and V3/R1's tool calls (the second carry a `function` type and a fenced block)."""

    name = "deepseek"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, items = delimited_items(text, SECTION, CALL)
        for index, body in items:
            head, sep, rest = body.partition(SEP)
            if not sep or not head.strip():
                result.fail(index, body, f"expected NAME{SEP}{{json}} inside a tool call, got: {snippet(body)}")
                continue
            name, raw_args = head.strip(), rest
            if name == "function":  # V3 / R1: the type, then the name on its own line and a fenced JSON block
                fenced = _FENCED.match(rest.strip())
                if not fenced:
                    result.fail(index, body, f"expected function{SEP}NAME and a ```json block, got: {snippet(body)}")
                    continue
                name, raw_args = fenced.group(1), fenced.group(2)
            args = json_arguments(raw_args, index, name, result)
            if args is not None:
                result.add(name, args)
        return result
