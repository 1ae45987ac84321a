"""The model's tool calls written as Hermes text (`<tool_call>{json}</tool_call>`), for the runners whose framework
leaves parsing to the environment (SkyRL-Gym's text actions); stdlib only, as each peer runs in its own venv."""

from __future__ import annotations

import json
import re

_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def parse_calls(text: str) -> list[tuple[str, dict]]:
    """(name, arguments) of every well-formed call in `text`; a malformed one is skipped."""
    calls = []
    for block in _CALL.findall(text):
        try:
            data = json.loads(block)
            calls.append((str(data["name"]), dict(data.get("arguments") or {})))
        except (ValueError, KeyError, TypeError):
            continue
    return calls


def calculate(name: str, arguments: dict) -> str:
    """The Calculator's tools, as every runner's environment implements them."""
    try:
        a, b = int(arguments.get("a", arguments.get("answer", 0))), int(arguments.get("b", 0))
    except (TypeError, ValueError):
        return "Error: the arguments must be integers"
    if name == "add":
        return str(a + b)
    if name == "subtract":
        return str(a - b)
    if name == "multiply":
        return str(a * b)
    if name == "submit":
        return f"Submitted {a}."
    return f"Error: unknown tool {name!r}"
