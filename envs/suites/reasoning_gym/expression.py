"""A calculator for the model: an arithmetic expression evaluated by walking its `ast`, numbers and operators only
(no names, calls or attributes, so no code of the model's ever runs), with bounds on size so no call can hang."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from rollgym.errors import UsageError

#: the longest expression accepted, and the largest integer result (in bits) and exponent a call may produce
MAX_EXPRESSION_CHARS = 2000
MAX_INTEGER_BITS = 10_000
MAX_EXPONENT = 10_000

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert}
_INTEGER_ONLY = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)


class ExpressionError(UsageError):
    """An expression the calculator does not evaluate; the message says what it accepts."""


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be too large to compute quickly."""
    if isinstance(op, ast.Pow):
        if abs(right) > MAX_EXPONENT:
            raise ExpressionError(f"exponents are limited to {MAX_EXPONENT}")
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() * abs(right) > MAX_INTEGER_BITS:
            raise ExpressionError(f"the result would have more than {MAX_INTEGER_BITS} bits")
    if isinstance(op, ast.LShift) and right > MAX_INTEGER_BITS:
        raise ExpressionError(f"shifts are limited to {MAX_INTEGER_BITS} bits")
    if isinstance(op, _INTEGER_ONLY) and not (isinstance(left, int) and isinstance(right, int)):
        raise ExpressionError("shifts and bitwise operators take integers")


def _value(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = _value(node.operand)
        if isinstance(node.op, ast.Invert) and not isinstance(operand, int):
            raise ExpressionError("~ takes an integer")
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        _check_size(node.op, left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):  # a fractional power of a negative number
            raise ExpressionError("the result is not a real number")
        if isinstance(result, int) and result.bit_length() > MAX_INTEGER_BITS:
            raise ExpressionError(f"the result would have more than {MAX_INTEGER_BITS} bits")
        return result
    raise ExpressionError(
        f"{type(node).__name__} is not arithmetic: use numbers, parentheses and + - * / // % ** << >> & | ^ ~"
    )


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression in Python's syntax and meaning (`7 // 2`, `2 ** 10`, `0x1f`, `1.5e3`;
    `^` is exclusive or)."""
    text = expression.strip()
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"an expression is limited to {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an arithmetic expression: {exc.msg}") from None
    try:
        result = _value(tree)
    except ExpressionError:
        raise
    except ZeroDivisionError:
        raise ExpressionError("division by zero") from None
    except OverflowError:
        raise ExpressionError("the result is too large for a float") from None
    except (ValueError, TypeError) as exc:  # a negative shift count; a complex power of a negative float is refused
        raise ExpressionError(str(exc)) from None
    if isinstance(result, float) and not math.isfinite(result):
        raise ExpressionError("the result is not a finite number")
    return result
