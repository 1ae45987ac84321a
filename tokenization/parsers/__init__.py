"""Tool-call parsers, one per model family's format, chosen from the chat template."""

from __future__ import annotations

from rollgym.tokenization.errors import InvalidInputError
from rollgym.tokenization.parsers.base import ParsedToolCalls, ToolCallParseError, ToolCallParser
from rollgym.tokenization.parsers.cohere import CohereParser
from rollgym.tokenization.parsers.deepseek import DeepSeekParser
from rollgym.tokenization.parsers.glm import GLMParser
from rollgym.tokenization.parsers.hermes import HermesOrBareJSONParser, HermesParser
from rollgym.tokenization.parsers.kimi_k2 import KimiK2Parser
from rollgym.tokenization.parsers.llama_json import LlamaJSONParser
from rollgym.tokenization.parsers.pythonic import PythonicParser
from rollgym.tokenization.parsers.reasoning import split_reasoning
from rollgym.tokenization.parsers.toolcall_json import ToolCallJSONParser
from rollgym.tokenization.parsers.xml_function import XMLFunctionParser

PARSERS: dict[str, type] = {
    "hermes": HermesParser,
    "hermes_or_json": HermesOrBareJSONParser,
    "xml_function": XMLFunctionParser,
    "glm": GLMParser,
    "llama_json": LlamaJSONParser,
    "kimi_k2": KimiK2Parser,
    "deepseek": DeepSeekParser,
    "toolcall_json": ToolCallJSONParser,
    "pythonic": PythonicParser,
    "cohere": CohereParser,
}

#: (marker in the template, format): the first marker a template contains names its tool-call format.
_MARKERS = [
    ("<|tool_calls_section_begin|>", "kimi_k2"),
    ("<｜tool▁calls▁begin｜>", "deepseek"),
    ("<|START_ACTION|>", "cohere"),
    ("<|tool_call_start|>", "pythonic"),
    ("<TOOLCALL>", "toolcall_json"),
    ("<arg_key>", "glm"),
]


def detect_parser(template: str) -> str | None:
    """Name the tool-call format a chat template teaches, or None when it has no tool calling."""
    if "<function=" in template and "<parameter=" in template:
        return "xml_function"
    for marker, name in _MARKERS:
        if marker in template:
            return name
    if "<tool_call>" in template:
        return "hermes"
    if '"parameters"' in template and ("ipython" in template or "<|python_tag|>" in template):
        return "llama_json"
    return None


def make_parser(name: str) -> ToolCallParser:
    """Instantiate a parser by name; unknown names list the known ones."""
    try:
        return PARSERS[name]()
    except KeyError:
        raise InvalidInputError(f"unknown tool-call parser {name!r}; known: {', '.join(sorted(PARSERS))}") from None


__all__ = [
    "PARSERS",
    "ParsedToolCalls",
    "ToolCallParseError",
    "ToolCallParser",
    "detect_parser",
    "make_parser",
    "split_reasoning",
]
