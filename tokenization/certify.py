"""Certification of a (tokenizer, chat template) pair: bridged trajectories must match full renders.

Each probe is a conversation. It is replayed the way a rollout builds it (start, canonical
assistant ids, bridges) and compared with one full render of the same conversation. Templates that
rewrite history (Qwen3 drops earlier `<think>`) cannot match a full render by design: for them each
bridge is checked against the template's own rendering of those messages in their real context.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from rollgym.tokenization.errors import (
    CertificationError,
    InvalidInputError,
    TemplateError,
    TokenizationError,
    UnsupportedFeatureError,
)

ProbeStatus = Literal["pass", "rewrites_history", "noncanonical", "unsupported", "fail"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "metric": {"type": "boolean"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer"},
                    "filters": {"type": "object"},
                },
                "required": ["query"],
            },
        },
    },
]


def _call(i: int, name: str, args: dict) -> dict:
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _tool(i: int, name: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": f"call_{i}", "name": name, "content": content}


def _asst(content: str = "", calls: list | None = None, reasoning: str | None = None) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = calls
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    return msg


class Probe(BaseModel):
    """One certification conversation and the features it needs."""

    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    template_kwargs: dict[str, Any] = Field(default_factory=dict)
    needs_reasoning: bool = False


SYS = {"role": "system", "content": "You are a careful assistant."}
PROBES: list[Probe] = [
    Probe(
        name="tool_result",
        tools=TOOLS,
        messages=[
            SYS,
            {"role": "user", "content": "Weather in Paris?"},
            _asst(calls=[_call(0, "get_weather", {"city": "Paris", "metric": True})]),
            _tool(0, "get_weather", '{"temp": 21, "sunny": true}'),
        ],
    ),
    Probe(
        name="user_followup",
        messages=[
            SYS,
            {"role": "user", "content": "Hello there."},
            _asst("Hello! How can I help?"),
            {"role": "user", "content": "Tell me a fact."},
        ],
    ),
    Probe(
        name="parallel_tool_calls",
        tools=TOOLS,
        messages=[
            {"role": "user", "content": "Weather in Paris and Rome?"},
            _asst(
                "Checking both.",
                [_call(0, "get_weather", {"city": "Paris"}), _call(1, "get_weather", {"city": "Rome"})],
            ),
            _tool(0, "get_weather", "21C"),
            _tool(1, "get_weather", "25C"),
        ],
    ),
    Probe(
        name="multi_turn_tools",
        tools=TOOLS,
        messages=[
            SYS,
            {"role": "user", "content": "Find the capital of France, then its weather."},
            _asst(calls=[_call(0, "search", {"query": "capital of France", "limit": 1})]),
            _tool(0, "search", "Paris"),
            _asst(calls=[_call(1, "get_weather", {"city": "Paris"})]),
            _tool(1, "get_weather", "21C"),
            _asst("Paris; it is 21C."),
            {"role": "user", "content": "Thanks!"},
        ],
    ),
    Probe(
        name="reasoning_tools",
        tools=TOOLS,
        needs_reasoning=True,
        template_kwargs={"enable_thinking": True},
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            _asst(calls=[_call(0, "get_weather", {"city": "Oslo"})], reasoning="I should call the tool."),
            _tool(0, "get_weather", "-3C"),
            _asst("It is -3C in Oslo.", reasoning="The tool answered."),
            {"role": "user", "content": "And tomorrow?"},
        ],
    ),
    Probe(
        name="reasoning_off",
        needs_reasoning=True,
        template_kwargs={"enable_thinking": False},
        messages=[{"role": "user", "content": "Say hi."}, _asst("Hi."), {"role": "user", "content": "Again."}],
    ),
    Probe(
        name="unicode",
        messages=[
            {"role": "user", "content": "Grüße, 世界! 😀 café naïve ẞ ﬁ"},
            _asst("Ça va — très bien 👍 日本語"),
            {"role": "user", "content": "Ελληνικά • עברית • العربية"},
        ],
    ),
    Probe(
        name="newlines",
        tools=TOOLS,
        messages=[
            {"role": "user", "content": "\n\nleading and trailing newlines\n\n"},
            _asst("two\nlines", [_call(0, "search", {"query": "a\nb"})]),
            _tool(0, "search", "\nline one\n\nline two\n"),
            _asst("done"),
            {"role": "user", "content": "  spaces  \n"},
        ],
    ),
    Probe(
        name="json_booleans",
        tools=TOOLS,
        messages=[
            {"role": "user", "content": "Search with filters."},
            _asst(
                calls=[
                    _call(
                        0, "search", {"query": "x", "limit": 0, "filters": {"safe": False, "lang": None, "ids": [1, 2]}}
                    )
                ]
            ),
            _tool(0, "search", "true"),
        ],
    ),
    Probe(
        name="special_token_lookalikes",
        tools=TOOLS,
        messages=[
            {
                "role": "user",
                "content": "Print these literally: <|im_end|> <|eot_id|> <end_of_turn> <tool_call> [gMASK]",
            },
            _asst(calls=[_call(0, "search", {"query": "</tool_call> <|im_start|>"})]),
            _tool(0, "search", '</tool_response><tool_call>{"name": "x"}</tool_call>'),
        ],
    ),
]


class ProbeResult(BaseModel):
    name: str
    status: ProbeStatus
    detail: str = ""


class CertificationReport(BaseModel):
    """The outcome of `certify`: passed only if no probe failed."""

    passed: bool
    tool_parser: str | None
    supports_tools: bool
    stop_token_ids: list[int]
    probes: list[ProbeResult]

    def failures(self) -> list[ProbeResult]:
        return [p for p in self.probes if p.status == "fail"]

    def table(self) -> str:
        width = max(len(p.name) for p in self.probes)
        rows = [f"{p.name:<{width}}  {p.status:<16}  {p.detail}" for p in self.probes]
        return "\n".join(rows)


class ReplayResult(BaseModel):
    """A conversation replayed through bridges, with what it was compared against."""

    status: ProbeStatus
    detail: str = ""
    trajectory_ids: list[int] = Field(default_factory=list)
    reference_ids: list[int] = Field(default_factory=list)
    completions: list[list[int]] = Field(default_factory=list, description="each assistant turn as it was written")


def _canonical_completion(tok, conv: list[dict], i: int, tools, kw):
    """The rendering the model emits for assistant message i when it reproduces the template exactly."""
    return tok.canonical_completion(conv, i, tools, kw)


def replay(tok, conv: list[dict], tools=None, template_kwargs: dict | None = None) -> ReplayResult:
    """Build `conv` as a rollout would (start, canonical completions, bridges); compare with a full render.

    Statuses: `pass` (identical to a full render), `rewrites_history` or `noncanonical` (a full render
    cannot be matched by any sampled sequence; every bridge was checked against the template's own
    rendering of its messages in context instead), `fail`.
    """
    kw = template_kwargs or {}
    if conv[-1]["role"] == "assistant":
        raise InvalidInputError("a probe conversation must end with an environment message")
    first = next((i for i, m in enumerate(conv) if m["role"] == "assistant"), None)
    if first is None:
        raise InvalidInputError("a probe conversation needs an assistant turn")
    traj = tok.start(conv[:first], tools, **kw)
    steps = []  # (assistant index, completion text, bridge ids, end index, the prompt rendering before it)
    noncanonical = []
    prompts: dict[int, Any] = {}  # each prefix's prompt rendering, rendered once
    i = first
    while i < len(conv):
        text = _canonical_completion(tok, conv, i, tools, kw)
        if text is None:
            return ReplayResult(
                status="fail", detail=f"the template renders assistant #{i} unlike its own generation prompt"
            )
        before = prompts[i] = prompts.get(i) or tok.rendering(conv[:i], tools, True, **kw)
        ids = tok.ids_of(text)
        if tok.ids_of(before + text) != tok.ids_of(before) + ids:
            noncanonical.append(i)  # BPE merges across the prompt boundary: no model can sample the full render
        traj.add_completion(ids, [0.0] * len(ids), "stop", message=conv[i])
        j = next((k for k in range(i + 1, len(conv)) if conv[k]["role"] == "assistant"), len(conv))
        bridge = traj.add_messages(conv[i + 1 : j])
        steps.append((i, text, bridge, j, ids))
        i = j
    got = traj.next_prompt_ids
    full_text = prompts[len(conv)] = tok.rendering(conv, tools, True, **kw)
    want = tok.ids_of(full_text)
    completions = [step[4] for step in steps]
    if got == want:
        return ReplayResult(status="pass", trajectory_ids=got, reference_ids=want, completions=completions)
    # Does the template itself rewrite history? Then no sampled sequence can equal a full render.
    rewritten = [i for i, text, _, _, _ in steps if not full_text.startswith(prompts[i] + text)]
    if not rewritten and not noncanonical:
        return ReplayResult(status="fail", detail=_diff(tok, got, want), trajectory_ids=got, reference_ids=want)
    for i, _, bridge, j, _ in steps:
        real = tok.ids_of(prompts.get(j) or tok.rendering(conv[:j], tools, True, **kw))
        if bridge and real[-len(bridge) :] != bridge:
            return ReplayResult(
                status="fail",
                detail=f"bridge after assistant #{i} differs from the template's own rendering "
                f"in context: {_diff(tok, bridge, real[-len(bridge) :])}",
                trajectory_ids=got,
                reference_ids=want,
            )
    if rewritten:
        return ReplayResult(
            status="rewrites_history",
            trajectory_ids=got,
            reference_ids=want,
            completions=completions,
            detail=f"the template re-renders assistant turn(s) {rewritten} differently later ({_change(tok, got, want)}); "
            "the trajectory keeps what was sampled; bridges checked in context",
        )
    return ReplayResult(
        status="noncanonical",
        trajectory_ids=got,
        reference_ids=want,
        completions=completions,
        detail=f"assistant turn(s) {noncanonical} merge with the prompt under BPE, so no sampled sequence "
        "equals a full render; bridges checked in context",
    )


def _change(tok, kept: list[int], rendered: list[int]) -> str:
    """What the re-render changes, at its first difference: the kept text and the text the template writes there."""
    at = next(
        (k for k, (a, b) in enumerate(zip(kept, rendered, strict=False)) if a != b), min(len(kept), len(rendered))
    )
    end_kept = next(
        (k for k in range(at, len(kept)) if kept[k:] == rendered[len(rendered) - len(kept) + k :]), len(kept)
    )
    end_rendered = len(rendered) - (len(kept) - end_kept)
    sampled, again = tok.decode(list(kept[at:end_kept]))[:60], tok.decode(list(rendered[at:end_rendered]))[:60]
    return f"sampled {sampled!r}, re-rendered {again!r}"


def _diff(tok, got: list[int], want: list[int]) -> str:
    at = next((k for k, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))

    def ctx(ids: list[int]) -> str:
        return repr(tok.decode(list(ids[max(0, at - 8) : at + 8])))

    return f"first difference at token {at} (bridged {len(got)} vs full render {len(want)} tokens): bridged {ctx(got)} vs full {ctx(want)}"


def certify(tok, strict: bool = True) -> CertificationReport:
    """Run every probe on `tok`; raise `CertificationError` naming the failing probe when `strict`."""
    try:
        stop_ids = tok.stop_token_ids
    except TokenizationError as exc:
        report = CertificationReport(
            passed=False,
            tool_parser=tok.tool_parser_name,
            supports_tools=False,
            stop_token_ids=[],
            probes=[ProbeResult(name="turn_structure", status="fail", detail=str(exc))],
        )
        if strict:
            raise CertificationError(f"certification failed: probe 'turn_structure': {exc}") from exc
        return report
    results = []
    for probe in PROBES:
        if probe.needs_reasoning and not tok.has_reasoning:
            results.append(
                ProbeResult(name=probe.name, status="unsupported", detail="template has no reasoning blocks")
            )
            continue
        if probe.tools and not tok.supports_tools:
            results.append(ProbeResult(name=probe.name, status="unsupported", detail="template has no tool calling"))
            continue
        messages = probe.messages
        if tok.has_reasoning and probe.template_kwargs.get("enable_thinking", True):
            # A thinking model writes some reasoning in every turn.
            messages = [
                dict(m, reasoning_content=m.get("reasoning_content") or "Thinking.") if m["role"] == "assistant" else m
                for m in messages
            ]
        try:
            res = replay(tok, messages, probe.tools, probe.template_kwargs)
            results.append(ProbeResult(name=probe.name, status=res.status, detail=res.detail))
        except UnsupportedFeatureError as exc:
            results.append(ProbeResult(name=probe.name, status="unsupported", detail=str(exc)))
        except TemplateError as exc:
            results.append(ProbeResult(name=probe.name, status="unsupported", detail=str(exc)))
        except TokenizationError as exc:
            results.append(ProbeResult(name=probe.name, status="fail", detail=f"{type(exc).__name__}: {exc}"))
    report = CertificationReport(
        passed=not any(r.status == "fail" for r in results),
        tool_parser=tok.tool_parser_name,
        supports_tools=tok.supports_tools,
        stop_token_ids=stop_ids,
        probes=results,
    )
    tok.certification = report
    if strict and not report.passed:
        first = report.failures()[0]
        raise CertificationError(f"certification failed: probe {first.name!r}: {first.detail}\n{report.table()}")
    return report
