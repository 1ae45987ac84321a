"""LFM2 / LFM2.5 tool calls: Python call syntax in one tag, `<|tool_call_start|>[get_weather(city='Paris'), f(n=1)]<|tool_call_end|>`.

The list is read with Python's own parser (`ast`), never evaluated: only literals (and JSON's `true`, `false`,
`null`, which the template writes for nested objects) are accepted as argument values. LFM2.5's template writes a
string value between single quotes without escaping it, so a line break inside one is read as part of the value
(a quote inside one cannot be told from its end: the family's own limit).
"""

from __future__ import annotations

import ast
from typing import Any

from rollgym.tokenization.parsers.base import ParsedToolCalls, delimited_items, snippet

BLOCK = ("<|tool_call_start|>", "<|tool_call_end|>")
_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


class _NotLiteral(ValueError):
    pass


def _literal(node: ast.AST) -> Any:
    """A literal value from the syntax tree (JSON names included); `_NotLiteral` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]  # keys checked not None above
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float, complex)):  # a negative number; `-"a"` is no literal
            return -value
    raise _NotLiteral(ast.dump(node)[:80])


def _escape_breaks(text: str) -> str:
    """`text` with the raw line breaks inside its quoted strings written as escapes (`\\n`, `\\r`)."""
    out, quote, k = [], None, 0
    while k < len(text):
        ch = text[k]
        if quote is None:
            if ch in "'\"":
                quote = ch
        elif ch == "\\":
            out.append(text[k : k + 2])
            k += 2
            continue
        elif ch == quote:
            quote = None
        elif ch in "\n\r":
            ch = "\\n" if ch == "\n" else "\\r"
        out.append(ch)
        k += 1
    return "".join(out)


def _function_name(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


class PythonicParser:
    """Parser for a Python list of calls with keyword arguments (LFM2's format)."""

    name = "pythonic"

    def parse(self, text: str, tools: list[dict] | None = None) -> ParsedToolCalls:
        result, blocks = delimited_items(text, None, BLOCK)
        index = 0
        for _, body in blocks:
            try:
                tree = ast.parse(_escape_breaks(body.strip()), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                result.fail(index, body, f"the call list is not valid Python call syntax ({exc}): {snippet(body)}")
                index += 1
                continue
            for node in tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]:
                self._call(node, index, body, result)
                index += 1
        return result

    @staticmethod
    def _call(node: ast.AST, index: int, body: str, result: ParsedToolCalls) -> None:
        name = _function_name(node.func) if isinstance(node, ast.Call) else None
        if not isinstance(node, ast.Call) or name is None:
            result.fail(index, body, f"expected a call like name(key=value), got: {snippet(body)}")
            return
        if node.args or any(k.arg is None for k in node.keywords):
            result.fail(index, body, f"{name}: arguments must be given as key=value")
            return
        try:
            result.add(name, {str(k.arg): _literal(k.value) for k in node.keywords})
        except (_NotLiteral, TypeError, RecursionError) as exc:
            result.fail(index, body, f"{name}: argument values must be literals, got {exc}")
