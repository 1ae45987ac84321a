"""Qwen3.5 / Qwen3-Coder tool calls: `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>`."""

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

_FUNCTION = re.compile(r"^\s*<function=([^>\s]+)>(.*?)</function>\s*$", re.DOTALL)
_PARAM = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.DOTALL)


class XMLFunctionParser:
    """Parser for the XML function format of the Qwen3.5 / Qwen3-Coder templates."""

    name = "xml_function"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, blocks = tool_call_blocks(text)
        for index, body in blocks:
            fn = _FUNCTION.match(body)
            if not fn:
                result.errors.append(
                    ToolCallParseError(
                        index=index,
                        raw=body,
                        message=f"expected <function=NAME>...</function> inside <tool_call>, got: {snippet(body.strip())}",
                    )
                )
                continue
            name, inner = fn.group(1), fn.group(2)
            leftover = _PARAM.sub("", inner).strip()
            if leftover:
                result.errors.append(
                    ToolCallParseError(
                        index=index,
                        raw=body,
                        message=f"unexpected text in <function={name}> outside <parameter=...> tags: {snippet(leftover)}",
                    )
                )
                continue
            types = tool_param_types(tools, name)
            result.calls.append(
                (name, {key: coerce_text_value(value, types.get(key)) for key, value in _PARAM.findall(inner)})
            )
        return result
