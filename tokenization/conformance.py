"""The conformance matrix: each model family against its own reference, over the conversations agents have.

A cell replays one conversation the way a rollout builds it (prompt once, the model's turns as the reference
writes them, environment messages as bridges) and compares with the reference's rendering, as certification
does; then each assistant turn, as the model would write it, must parse back to the same tool calls and text.
`exact` is identical to a full render; `exact (rewrites)` means the reference re-renders history (drops
reasoning, moves tools) so no single sequence can equal it, and every bridge was checked against the
reference's own rendering in context instead; `unsupported` says why the family cannot express the case.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel

from rollgym.tokenization.certify import TOOLS, replay
from rollgym.tokenization.errors import TemplateError, TokenizationError, UnsupportedFeatureError

CellStatus = Literal["exact", "exact (rewrites)", "unsupported", "fail"]

SCENARIOS = ["one_call", "parallel_calls", "tool_error", "reasoning_on", "reasoning_off", "edge_values", "turns_32"]
TITLES = {
    "one_call": "one tool call",
    "parallel_calls": "several calls in a turn",
    "tool_error": "a tool error",
    "reasoning_on": "reasoning on",
    "reasoning_off": "reasoning off",
    "edge_values": "unicode and JSON edge values",
    "turns_32": "32 turns",
}

_EDGE_QUERY = 'quote " backslash \\ newline\nand tab\t, unicode é 世界 😀 עברית, {"json": [1]} <b>'
_EDGE_FILTERS: dict[str, Any] = {
    "null": None,
    "float": -1.5e-7,
    "big": 12345678901234567890,
    "empty": "",
    "nested": {"a": [1, {"b": False}], "c": {}},
    "list": [],
    "escaped": "\\u0041 \u2028",
}


#: How a scenario names its calls: OpenAI-style by default; a family whose model writes its own ids (Kimi K2's
#: `functions.NAME:IDX`) gets them in that form, since its template prints the id where the name would be.
_ID_FORMAT = {"format": "call{index:05d}"}


def _id(i: int, name: str) -> str:
    return _ID_FORMAT["format"].format(index=i, name=name)


def _call(i: int, name: str, args: dict) -> dict:
    return {"id": _id(i, name), "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _assistant(content: str = "", calls: list | None = None) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _tool(i: int, name: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": _id(i, name), "name": name, "content": content}


def scenario(name: str, call_id_format: str | None = None) -> list[dict]:
    """The conversation of one matrix column (it ends with an environment message, as a rollout's prompt does);
    `call_id_format` names the calls (`{index}`, `{name}`)."""
    _ID_FORMAT["format"] = call_id_format or "call{index:05d}"
    system = {"role": "system", "content": "You are a careful assistant."}
    if name == "parallel_calls":
        return [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            _assistant(calls=[_call(0, "get_weather", {"city": "Paris"}), _call(1, "get_weather", {"city": "Rome"})]),
            _tool(0, "get_weather", "21C"),
            _tool(1, "get_weather", "25C"),
        ]
    if name == "tool_error":
        return [
            system,
            {"role": "user", "content": "Search for nothing."},
            _assistant(calls=[_call(0, "search", {"query": ""})]),
            _tool(0, "search", "Error: the query is empty. Give a non-empty `query`."),
            _assistant(calls=[_call(1, "search", {"query": "anything", "limit": 1})]),
            _tool(1, "search", "one result"),
        ]
    if name == "edge_values":
        return [
            {"role": "user", "content": "Grüße 世界 😀 — עברית ﬁ \u2028 <|im_end|> [INST]"},
            _assistant(calls=[_call(0, "search", {"query": _EDGE_QUERY, "limit": 0, "filters": _EDGE_FILTERS})]),
            _tool(0, "search", json.dumps({"ok": True, "items": [None, 1.0, "ü"]}, ensure_ascii=False)),
        ]
    if name == "turns_32":
        conv: list[dict] = [system, {"role": "user", "content": "Search 32 times."}]
        for k in range(32):
            conv += [_assistant(calls=[_call(k, "search", {"query": f"q{k}"})]), _tool(k, "search", f"r{k}")]
        return conv
    # one_call, reasoning_on, reasoning_off: one call, its result, an answer, a follow-up
    return [
        system,
        {"role": "user", "content": "Weather in Paris?"},
        _assistant(calls=[_call(0, "get_weather", {"city": "Paris", "metric": True})]),
        _tool(0, "get_weather", '{"temp": 21, "sunny": true}'),
        _assistant("It is 21C and sunny."),
        {"role": "user", "content": "Thanks!"},
    ]


class Cell(BaseModel):
    """One family on one scenario."""

    scenario: str
    status: CellStatus
    detail: str = ""


def _options(reasoning: dict[str, dict], on: bool) -> dict:
    return dict(reasoning.get("on" if on else "off", {}))


def check_cell(tok, name: str, reasoning: dict[str, dict] | None = None, call_id_format: str | None = None) -> Cell:
    """Replay scenario `name` on `tok` against its reference, then parse every assistant turn back."""
    reasoning = reasoning or {}
    think = name != "reasoning_off" and tok.has_reasoning
    if name == "reasoning_on" and not tok.has_reasoning:
        return Cell(scenario=name, status="unsupported", detail="the family has no reasoning blocks")
    options = _options(reasoning, think)
    if name == "reasoning_off" and tok.has_reasoning and _opens_reasoning(tok, options):
        return Cell(scenario=name, status="unsupported", detail="its generation prompt always opens a reasoning block")
    conv = scenario(name, call_id_format)
    if think:
        conv = [
            dict(m, reasoning_content=f"Thinking about turn {i}.") if m["role"] == "assistant" else m
            for i, m in enumerate(conv)
        ]
    try:
        result = replay(tok, conv, TOOLS, options)
        if result.status == "fail":
            return Cell(scenario=name, status="fail", detail=result.detail)
        problem = _parse_back(tok, conv, result.completions)
    except (UnsupportedFeatureError, TemplateError) as exc:
        return Cell(scenario=name, status="unsupported", detail=str(exc).split("\n")[0][:300])
    except TokenizationError as exc:
        return Cell(scenario=name, status="fail", detail=f"{type(exc).__name__}: {exc}"[:500])
    if problem:
        return Cell(scenario=name, status="fail", detail=problem)
    status: CellStatus = "exact" if result.status == "pass" else "exact (rewrites)"
    return Cell(scenario=name, status=status, detail="" if status == "exact" else result.detail)


def _opens_reasoning(tok, options: dict) -> bool:
    """Whether the prompt for a turn ends inside an open reasoning block (the model must reason)."""
    try:
        prompt = tok.render([{"role": "user", "content": "Hi."}], None, True, **options)
    except TokenizationError:
        return False
    open_tag, close_tag = tok.reasoning_tags
    tail = prompt[prompt.rfind(open_tag) :] if open_tag and open_tag in prompt else ""
    return bool(tail) and close_tag not in tail


def _parse_back(tok, conv: list[dict], completions: list[list[int]]) -> str | None:
    """Why an assistant turn, written as the model writes it (`completions`, from the replay), does not parse back
    to its calls and text."""
    turns = [msg for msg in conv if msg["role"] == "assistant"]
    for i, (msg, written) in enumerate(zip(turns, completions, strict=True)):
        parsed = tok.parse_completion(written, TOOLS)
        if parsed.errors:
            return f"assistant #{i} does not parse: {parsed.errors[0].message}"
        want = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg.get("tool_calls") or []]
        got = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed.tool_calls]
        if got != want:
            return f"assistant #{i} parses to calls {got!r}, not {want!r}"
        if (parsed.message.get("content") or "").strip() != (msg.get("content") or "").strip():
            return f"assistant #{i} parses to content {parsed.message.get('content')!r}, not {msg.get('content')!r}"
    return None


class FamilyRow(BaseModel):
    """A family's cells, with what it was checked against."""

    family: str
    title: str
    reference: str
    vocabulary: str
    cells: list[Cell]


def row(tok, fam) -> FamilyRow:
    """The matrix row of family `fam` (a `Family`) on `tok`."""
    reference = fam.reference if fam.reference != "template" else f"template `{fam.template}`"
    vocabulary = fam.vocabulary + ("" if fam.real_vocabulary else " (stand-in)")
    cells = [check_cell(tok, name, fam.reasoning, fam.call_id_format) for name in SCENARIOS]
    return FamilyRow(family=fam.name, title=fam.title, reference=reference, vocabulary=vocabulary, cells=cells)


_MARK = {"exact": "exact", "exact (rewrites)": "exact, rewrites", "unsupported": "unsupported", "fail": "**FAIL**"}


def markdown(rows: list[FamilyRow]) -> str:
    """The matrix as the Markdown table `docs/tokenization.md` holds, with the reasons for `unsupported` below."""
    head = "| family | reference | vocabulary | " + " | ".join(TITLES[s] for s in SCENARIOS) + " |"
    lines = [head, "|" + " --- |" * (3 + len(SCENARIOS))]
    notes: dict[str, int] = {}
    for r in rows:
        marks = []
        for cell in r.cells:
            mark = _MARK[cell.status]
            if cell.status in ("unsupported", "fail"):
                note = notes.setdefault(cell.detail, len(notes) + 1)
                mark += f" [{note}]"
            marks.append(mark)
        lines.append(f"| {r.family} | {r.reference} | {r.vocabulary} | " + " | ".join(marks) + " |")
    lines.append("")
    lines += [f"[{n}] {detail}" for detail, n in notes.items()]
    return "\n".join(lines) + "\n"
