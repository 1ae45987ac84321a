"""Rollout records: versioned pydantic models of one episode, turn by turn, with derived views.

A `Rollout` is made of `Turn`s; each turn holds the generation's exact ids and logprobs, the parsed
assistant message, the tool calls, and the environment's reply with its bridge ids. The token view
(TRL's `prompt_ids`/`completion_ids`/`logprobs`/`env_mask`) and the message view (OpenAI messages)
are derived, never stored twice. (The structure TRL's async-rollout refactor, huggingface/trl #5318,
proposed.)
"""

from __future__ import annotations

import time
import traceback
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, field_validator, model_validator

from rollgym.engines.base import VersionChange
from rollgym.errors import SandboxError

#: 2: each turn records the weights version that sampled it (`Turn.policy_version`, `Turn.version_changes`), and a
#: rollout how its prompts were built (`history`, `history_cost`, `Turn.resample`); a version-1 record loads with
#: none of them (None, [], "keep", {}, None).
#: 3: what rollgym itself records about a rollout's making is typed (`proxy`, `async_worker`, `env_task_id`,
#: `agent_output`), and the budgets it ran under (`limits`); `meta` is the user's own. A version-2 record's `meta` keys of those load into the typed fields.
SCHEMA_VERSION = 3

StopReason = Literal[
    "no_tool_call",  # the model answered without a tool call and the environment ended the episode
    "env_terminated",  # the environment ended the episode (e.g. `submit`)
    "env_truncated",  # the environment hit its own turn limit
    "max_turns",  # the loop's turn limit
    "context_limit",  # the next prompt would not fit in max_model_len
    "token_budget",  # the total sampled-token budget is spent
    "truncated_completion",  # a completion hit max_tokens and the truncation policy ends the trajectory
    "timeout",  # the rollout's wall-clock limit
    "error",  # a failure at a boundary; see `error`
]
#: Where a rollout failed. Infrastructure (retried on resume): engine, sandbox, internal. Results: environment
#: (its own bug), tokenization, timeout, agent (an agent process failed), disk (the agent's commands went over
#: the sandbox's disk budget).
ErrorCategory = Literal["engine", "environment", "sandbox", "tokenization", "timeout", "internal", "agent", "disk"]


#: The one length rule for a recorded failure's message (a runaway traceback or log stays bounded in every record).
MAX_ERROR_MESSAGE = 2000
#: A recorded traceback keeps its last this many characters (where the failure happened).
MAX_TRACEBACK = 8000
#: Where in an episode a failure happened.
FailurePhase = Literal["setup", "generate", "tokenize", "step", "tool", "reward", "loop", "agent", "prepare"]
_ERROR_CATEGORIES: tuple[str, ...] = get_args(ErrorCategory)


class ErrorRecord(BaseModel):
    """The record of a failure caught at a boundary (data, not an exception): which boundary, the
    exception's type and message, and the turn."""

    category: ErrorCategory
    type: str
    message: str
    turn: int | None = None
    phase: FailurePhase | None = Field(default=None, description="where in the episode it failed")
    traceback: str | None = Field(default=None, description="the exception's traceback, its last part")

    @field_validator("message")
    @classmethod
    def _bounded(cls, message: str) -> str:
        return message[:MAX_ERROR_MESSAGE]

    @field_validator("traceback")
    @classmethod
    def _bounded_traceback(cls, text: str | None) -> str | None:
        return text if text is None or len(text) <= MAX_TRACEBACK else "...\n" + text[-MAX_TRACEBACK:]

    @classmethod
    def of(
        cls,
        exc: BaseException,
        category: ErrorCategory | None = None,
        turn: int | None = None,
        phase: FailurePhase | None = None,
    ) -> ErrorRecord:
        """The record of `exc`: its category as given, else the one it names (`exc.category`), else `sandbox` for a
        sandbox failure and `environment` for anything else an environment raised; with its traceback, when it was
        raised (not only made), and the phase it failed in."""
        trace = "".join(traceback.format_exception(exc)) if exc.__traceback__ is not None else None
        return cls(
            category=category or failure_category(exc),
            type=type(exc).__name__,
            message=str(exc),
            turn=turn,
            phase=phase,
            traceback=trace,
        )


def failure_category(exc: BaseException) -> ErrorCategory:
    """Sandbox failures (dead container, daemon errors) are told apart from the environment's own; an error that
    names its category (the disk budget: `disk`) keeps it."""
    named = getattr(exc, "category", None)
    if named in _ERROR_CATEGORIES:
        return named
    return "sandbox" if isinstance(exc, SandboxError) else "environment"


class ToolCall(BaseModel):
    """One tool call of a turn and its outcome."""

    id: str
    name: str
    arguments: Any = None
    result: str = ""
    failed: bool = False
    duration_s: float = 0.0


HistoryMode = Literal["keep", "template"]


class Resample(BaseModel):
    """Under `history="template"`, a turn whose prompt (what the template renders) does not extend the previous
    turn's sequence starts a new training sample: its prompt is that sequence's first `shared` ids, then `ids`
    (stored once, not copied: the samples of a rollout form a tree sharing prefixes)."""

    shared: int
    ids: list[int]


class HistoryCost(BaseModel):
    """What one history choice makes of a rollout: training samples, and their tokens in all."""

    samples: int
    tokens: int


class Turn(BaseModel):
    """One model turn: what was sampled, what it meant, and how the environment answered."""

    index: int
    prompt_len: int = Field(description="length of the prompt the engine saw for this turn")
    resample: Resample | None = Field(default=None, description="this turn starts a new sample (history='template')")
    completion_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    finish_reason: str = "stop"
    generate_s: float = 0.0
    message: dict[str, Any] = Field(default_factory=dict)
    parse_errors: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    env_messages: list[dict[str, Any]] = Field(default_factory=list)
    bridge_ids: list[int] = Field(default_factory=list)
    env_s: float = 0.0
    reward: float = 0.0
    policy_version: int | None = Field(
        default=None, description="the weights version that sampled this turn's first token (None: not tracked)"
    )
    version_changes: list[VersionChange] = Field(
        default_factory=list, description="weights that took over inside this turn (a sync mid-generation)"
    )

    def token_versions(self) -> list[int | None]:
        """The weights version of each sampled id (None throughout when the engine kept no versions). A change at an
        unknown token (`at` None) is taken to start at the turn's first token: its tokens count as the newer
        version's, which no staleness bound lets through unnoticed, but its logprobs may mix both."""
        versions: list[int | None] = [self.policy_version] * len(self.completion_ids)
        for change in self.version_changes:
            start = 0 if change.at is None else change.at
            versions[start:] = [change.version] * (len(versions) - start)
        return versions


def concat_turns(turns: Sequence[Turn], keep_trailing_bridge: bool = False, versions: bool = False) -> dict[str, list]:
    """The completion side of one training sample, the one place it is put together: each turn's sampled ids (env_mask
    1, their sampling logprobs), then the environment's bridge ids (env_mask 0, logprob 0.0), none after the last turn
    unless `keep_trailing_bridge`. With `versions`, also the weights version of each id (None on the environment's)."""
    ids: list[int] = []
    logprobs: list[float] = []
    mask: list[int] = []
    by_version: list[int | None] = []
    last = len(turns) - 1
    for k, turn in enumerate(turns):
        ids += turn.completion_ids
        logprobs += turn.logprobs
        mask += [1] * len(turn.completion_ids)
        if versions:
            by_version += turn.token_versions()
        if k < last or keep_trailing_bridge:
            ids += turn.bridge_ids
            logprobs += [0.0] * len(turn.bridge_ids)
            mask += [0] * len(turn.bridge_ids)
            if versions:
                by_version += [None] * len(turn.bridge_ids)
    out: dict[str, list] = {"completion_ids": ids, "logprobs": logprobs, "env_mask": mask}
    if versions:
        out["versions"] = by_version
    return out


class ProxyProvenance(BaseModel):
    """Where a rollout the recording proxy made comes from: its session, the segment (one rollout each) and why that
    segment started, the session's calls in it, and warnings of those calls."""

    session: str
    segment: int | None = None
    segment_reason: str | None = None
    parent_call: int | None = None
    calls: list[int] = Field(default_factory=list)
    session_errors: int = 0
    warnings: list[str] = Field(default_factory=list)
    segments: int | None = Field(default=None, description="the session's segments (on the one picked for its row)")
    segment_reasons: list[str | None] = Field(default_factory=list)


class AsyncWorkerRecord(BaseModel):
    """What the asynchronous rollout worker did with a rollout: its group, the trainer's version when it started and
    the version it counts as, its staleness, and its fate (pushed, dropped_stale, aborted_stale, stopped, ...)."""

    group: int | None = None
    started_version: int | None = None
    model_version: int | None = None
    staleness: int | None = None
    reward: float | None = None
    fate: str | None = None


class RolloutTimings(BaseModel):
    """Where one rollout's wall-clock time went, in seconds."""

    started_at: float = Field(default_factory=time.time)
    wall_s: float = 0.0
    generate_s: float = 0.0
    env_s: float = 0.0
    reset_s: float = 0.0


class Rollout(BaseModel):
    """One episode of one task: JSON-serialisable, versioned, self-describing."""

    schema_version: int = SCHEMA_VERSION
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    env_id: str = ""
    task_id: str = ""
    group_id: str = ""
    sample_index: int = 0
    prompt_ids: list[int] = Field(default_factory=list)
    initial_messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    reward: float = 0.0
    reward_components: dict[str, float] = Field(default_factory=dict)
    stop_reason: StopReason | None = None
    truncated: bool = False
    error: ErrorRecord | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    limits: dict[str, Any] = Field(
        default_factory=dict, description="the budgets it ran under (rg.Limits: max_turns, max_tokens_per_turn, ...)"
    )
    engine: str = ""
    model: str = ""
    token_exact: bool = True
    rollgym_version: str = ""
    timings: RolloutTimings = Field(default_factory=RolloutTimings)
    env_task_id: str | None = Field(
        default=None, description="the environment's own id for the task, when the row's id (task_id) differs"
    )
    proxy: ProxyProvenance | None = Field(default=None, description="the proxy session and segment it came from")
    agent_output: str | None = Field(default=None, description="the end of a black-box agent's own output")
    async_worker: AsyncWorkerRecord | None = Field(default=None, description="the asynchronous worker's record")
    meta: dict[str, Any] = Field(default_factory=dict, description="the user's own provenance (rollgym writes none)")
    history: HistoryMode = Field(
        default="keep", description="how each turn's prompt was built: keep (extend) or template"
    )
    history_cost: dict[str, HistoryCost] = Field(
        default_factory=dict, description="samples and tokens under each history choice ('keep', 'template')"
    )

    @model_validator(mode="before")
    @classmethod
    def _typed_provenance(cls, data: Any) -> Any:
        """A version-2 record kept what rollgym wrote about a rollout's making in `meta`: load it into the fields."""
        if not isinstance(data, dict) or not data.get("meta") or data.get("schema_version", 1) >= 3:
            return data
        data, meta = dict(data), dict(data["meta"])
        if "env_task_id" in meta:
            data["env_task_id"] = meta.pop("env_task_id")
        if "agent_output" in meta:
            data["agent_output"] = meta.pop("agent_output")
        if "async" in meta:
            data["async_worker"] = meta.pop("async")
        if "proxy_session" in meta:
            keys = set(ProxyProvenance.model_fields) - {"session"}
            data["proxy"] = {"session": meta.pop("proxy_session"), **{k: meta.pop(k) for k in keys if k in meta}}
        data["meta"] = meta
        return data

    # --- derived views ---------------------------------------------------------------------------
    def samples(self) -> list[dict[str, list]]:
        """TRL's rollout keys for each training sample: one under `history="keep"`; under `"template"` one per
        run of turns whose prompts extend each other (a rewrite of history starts the next)."""
        runs: list[list[Turn]] = [[]]
        prompts: list[list[int]] = [list(self.prompt_ids)]
        for turn in self.turns:
            if turn.resample is not None:
                runs.append([])
                sequence = prompts[-1] + concat_turns(runs[-2], keep_trailing_bridge=True)["completion_ids"]
                prompts.append(sequence[: turn.resample.shared] + turn.resample.ids)
            runs[-1].append(turn)
        last = len(runs) - 1
        return [
            {"prompt_ids": prompt, **concat_turns(run, keep_trailing_bridge=k < last)}
            for k, (prompt, run) in enumerate(zip(prompts, runs, strict=True))
        ]

    def token_view(self, keep_trailing_bridge: bool = False) -> dict[str, list]:
        """TRL's rollout keys. By default the sequence ends on the model's last sampled token. Under
        `history="template"` with a rewrite, the last sample (the one holding the last turn; `samples()` has all)."""
        if any(t.resample is not None for t in self.turns):
            return self.samples()[-1]
        return {"prompt_ids": list(self.prompt_ids), **concat_turns(self.turns, keep_trailing_bridge)}

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI messages (for SFT or reading)."""
        out = list(self.initial_messages)
        for turn in self.turns:
            if turn.message:
                out.append(turn.message)
            out += turn.env_messages
        return out

    def metrics(self) -> dict[str, float]:
        """Flat per-rollout metrics: turns, tool calls and failures (per tool), token and time split."""
        calls = [c for t in self.turns for c in t.tool_calls]
        sampled = sum(len(t.completion_ids) for t in self.turns)
        env_tokens = sum(len(t.bridge_ids) for t in self.turns)
        out: dict[str, float] = {
            "turns": float(len(self.turns)),
            "tool_calls": float(len(calls)),
            "tool_failures": float(sum(c.failed for c in calls)),
            "parse_errors": float(sum(len(t.parse_errors) for t in self.turns)),
            "sampled_tokens": float(sampled),
            "logprob_mean": (sum(lp for t in self.turns for lp in t.logprobs) / sampled) if sampled else 0.0,
            "env_tokens": float(env_tokens),
            "generate_s": self.timings.generate_s,
            "env_s": self.timings.env_s,
            "wall_s": self.timings.wall_s,
        }
        for name, n in Counter(c.name for c in calls).items():
            out[f"tool_calls/{name}"] = float(n)
        for name, n in Counter(c.name for c in calls if c.failed).items():
            out[f"tool_failures/{name}"] = float(n)
        return out

    def to_json(self) -> str:
        """The rollout as one JSON line's text; a value JSON cannot hold (an env's own object) is written as text."""
        return self.model_dump_json(fallback=str, warnings=False)

    @property
    def key(self) -> tuple[str, int]:
        """(task id, sample index): what `--resume` matches on."""
        return (self.task_id, self.sample_index)


def errored_rollout(error: ErrorRecord, **fields: Any) -> Rollout:
    """The one way a rollout that failed before or outside the loop is recorded: `stop_reason` "error", `error`, and
    the identifying `fields` it has (env_id, task_id, group_id, sample_index, engine, ...)."""
    return Rollout(stop_reason="error", error=error, **fields)
