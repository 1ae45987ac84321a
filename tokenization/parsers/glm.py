"""GLM-4.5/4.6 tool calls: `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`."""

from __future__ import annotations

import re

from rollgym.tokenization.parsers.base import (
    ParsedToolCalls,
    ToolCallParseError,
    coerce_text_value,
    snippet,
    tool_call_blocks,
    tool_param_types,
)

_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


class GLMParser:
    """Parser for the GLM-4.5 arg_key/arg_value format."""

    name = "glm"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, blocks = tool_call_blocks(text)
        for index, body in blocks:
            head = body.partition("<arg_key>")[0]
            name = head.strip()
            if not name or any(c.isspace() for c in name):
                result.errors.append(
                    ToolCallParseError(
                        index=index,
                        raw=body,
                        message=f"expected a function name right after <tool_call>, got: {snippet(name)!r}",
                    )
                )
                continue
            rest = body[len(head) :]
            leftover = _PAIR.sub("", rest).strip()
            if leftover:
                result.errors.append(
                    ToolCallParseError(
                        index=index,
                        raw=body,
                        message=f"unexpected text in tool call {name} outside <arg_key>/<arg_value> pairs: {snippet(leftover)}",
                    )
                )
                continue
            types = tool_param_types(tools, name)
            result.calls.append(
                (name, {k.strip(): coerce_text_value(v, types.get(k.strip())) for k, v in _PAIR.findall(rest)})
            )
        return result
