"""`RunSummary`: what a batch of rollouts amounts to (reward, pass@k per task, resolved rate, tokens/s, turns,
errors by category), as `rollgym.generate` returns it and `summary.json` holds it."""

from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from rollgym.rollouts.output import SUMMARY_FILE, is_infra_failure
from rollgym.rollouts.records import Rollout


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _flat(data: dict[str, Any]) -> dict[str, Any]:
    """`pass_at_k: {1: x}` as the `"pass@1": x` keys of summary.json."""
    out = {k: v for k, v in data.items() if k != "pass_at_k"}
    passes = {f"pass@{k}": v for k, v in sorted(data.get("pass_at_k", {}).items())}
    keys = list(out)
    at = keys.index("reward_mean") + 1 if "reward_mean" in keys else len(keys)
    return dict([*[(k, out[k]) for k in keys[:at]], *passes.items(), *[(k, out[k]) for k in keys[at:]]])


class _Subscriptable(BaseModel):
    def __getitem__(self, key: str) -> Any:
        """`summary["pass@1"]`, `summary["reward_mean"]`: the keys of summary.json, as the dict this replaced."""
        return self.to_dict()[key]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of summary.json (`pass@k` keys)."""
        return _flat(self.model_dump(mode="json"))


class TaskSummary(_Subscriptable):
    """One task's group: samples, how many reached the success threshold, mean reward, pass@k."""

    n: int
    correct: int
    reward_mean: float
    pass_at_k: dict[int, float] = Field(default_factory=dict)


class RunSummary(_Subscriptable):
    """A batch of rollouts in figures; `rollouts == 0` and nothing else for an empty batch."""

    rollouts: int = 0
    tasks: int = 0
    reward_mean: float | None = None
    pass_at_k: dict[int, float] = Field(default_factory=dict, description="mean over tasks of each task's pass@k")
    resolved_rate: float | None = None
    sampled_tokens: int = 0
    tokens_per_s: float | None = None
    turns_mean: float | None = None
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    errors: dict[str, int] = Field(default_factory=dict, description="errored rollouts by category")
    infra_failures: int = 0
    per_task: dict[str, TaskSummary] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        if not self.rollouts:
            return {"rollouts": 0}
        out = _flat(self.model_dump(mode="json", exclude={"per_task"}))
        out["per_task"] = {tid: t.to_dict() for tid, t in self.per_task.items()}
        return out


def summarize(rollouts: Iterable[Rollout], wall_s: float | None = None, success_threshold: float = 1.0) -> RunSummary:
    """Reward mean, pass@k per task, resolved rate, tokens/s, turns, errors by category."""
    rollouts = list(rollouts)
    if not rollouts:
        return RunSummary()
    by_task: dict[str, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        by_task[r.task_id].append(r)
    k_max = min(len(v) for v in by_task.values())
    ks = sorted({1, k_max} | {k for k in (2, 4, 8) if k <= k_max})
    per_task = {}
    for tid, rs in sorted(by_task.items()):
        c = sum(r.reward >= success_threshold for r in rs)
        per_task[tid] = TaskSummary(
            n=len(rs),
            correct=c,
            reward_mean=sum(r.reward for r in rs) / len(rs),
            pass_at_k={k: pass_at_k(len(rs), c, k) for k in ks if k <= len(rs)},
        )
    sampled = sum(len(t.completion_ids) for r in rollouts for t in r.turns)
    resolved = [r.reward_components["resolved"] for r in rollouts if "resolved" in r.reward_components]
    wall = wall_s if wall_s is not None else sum(r.timings.wall_s for r in rollouts)
    return RunSummary(
        rollouts=len(rollouts),
        tasks=len(by_task),
        reward_mean=sum(r.reward for r in rollouts) / len(rollouts),
        pass_at_k={k: sum(t.pass_at_k[k] for t in per_task.values()) / len(per_task) for k in ks},
        resolved_rate=(sum(resolved) / len(resolved)) if resolved else None,
        sampled_tokens=sampled,
        tokens_per_s=sampled / wall if wall else None,
        turns_mean=sum(len(r.turns) for r in rollouts) / len(rollouts),
        stop_reasons=dict(Counter(r.stop_reason for r in rollouts if r.stop_reason is not None)),
        errors=dict(Counter(r.error.category for r in rollouts if r.error)),
        infra_failures=sum(is_infra_failure(r) for r in rollouts),
        per_task=per_task,
    )


def write_summary(out_dir: str | os.PathLike, summary: RunSummary) -> Path:
    """`out_dir/summary.json`."""
    path = Path(out_dir) / SUMMARY_FILE
    path.write_text(json.dumps(summary.to_dict(), indent=2))
    return path


def read_summary(out_dir: str | os.PathLike) -> RunSummary:
    """A run's `summary.json` as a `RunSummary`."""
    data = json.loads((Path(out_dir) / SUMMARY_FILE).read_text())
    passes = {int(k.removeprefix("pass@")): v for k, v in data.items() if k.startswith("pass@")}
    tasks = {
        tid: TaskSummary(
            **{k: v for k, v in t.items() if not k.startswith("pass@")},
            pass_at_k={int(k.removeprefix("pass@")): v for k, v in t.items() if k.startswith("pass@")},
        )
        for tid, t in data.get("per_task", {}).items()
    }
    return RunSummary(
        **{k: v for k, v in data.items() if not k.startswith("pass@") and k != "per_task"},
        pass_at_k=passes,
        per_task=tasks,
    )
