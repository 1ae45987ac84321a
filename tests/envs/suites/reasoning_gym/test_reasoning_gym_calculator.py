"""The calculator tool's evaluator: arithmetic by walking the `ast`, and everything else refused with what it accepts,
including what would run code or take too long."""

from __future__ import annotations

import pytest

from rollgym.envs.suites.reasoning_gym.expression import ExpressionError, evaluate
from rollgym.errors import UsageError


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("( 56 + -33 ) - 84", -61),
        ("7 // 2 + 7 % 2", 4),
        ("2 ** 10", 1024),
        ("2 ** -2", 0.25),
        ("1.391*5.049", 1.391 * 5.049),
        ("(0xd6e3 * 0x2c49) + (0x4167 * 0x9c1f)", 0x4D0EFA34),
        ("(0x3 << 2) >> 1", 6),
        ("6 & 3 | 8 ^ 1", (6 & 3) | (8 ^ 1)),
        ("~5", -6),
        (" 1e3 / 4 ", 250.0),
    ],
)
def test_arithmetic_has_pythons_meaning(expression, value):
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("__import__('os').system('true')", "Call is not arithmetic"),
        ("x + 1", "Name is not arithmetic"),
        ("(1).__class__", "Attribute is not arithmetic"),
        ("[1, 2]", "List is not arithmetic"),
        ("'a' * 3", "Constant is not arithmetic"),
        ("1 if 1 else 2", "IfExp is not arithmetic"),
        ("1 +", "not an arithmetic expression"),
        ("1 / 0", "division by zero"),
        ("9 ** 9 ** 9", "exponents are limited"),
        ("99 ** 9999", "more than 10000 bits"),
        ("1 << 100000", "shifts are limited"),
        ("1 << -1", "negative shift count"),
        ("1.5 & 1", "bitwise operators take integers"),
        ("10.0 ** 400", "too large for a float"),
        ("(-8.0) ** 0.5", "not a real number"),
        ("1 + " * 1000 + "1", "limited to 2000 characters"),
    ],
)
def test_anything_else_is_refused_saying_why(expression, needle):
    with pytest.raises(ExpressionError, match=needle) as caught:
        evaluate(expression)
    assert isinstance(caught.value, UsageError)
