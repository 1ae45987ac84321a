"""`TrainingSample`: one rollout's training sample in no trainer's shape, what every trainer's room converts from.

Each trainer names and aligns the same facts its own way (verl's `response_mask`, SkyRL's `loss_masks`, AReaL's
`versions`); this is the one place they are read off a `Rollout`, fitted to a trainer's length budget, and a failed
rollout turned into a sample no gradient flows through.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from rollgym.errors import UsageError
from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts
from rollgym.rollouts.records import Rollout, concat_turns


class TrainingSample(BaseModel):
    """Prompt ids, then the completion side (sampled ids with env_mask 1 and their sampling logprobs, environment ids
    with env_mask 0 and logprob 0.0), each id's weights version, the reward and where the sample came from."""

    rollout_id: str
    group_id: str
    task_id: str
    env_id: str
    sample: int = Field(default=0, description="index among the rollout's samples (history='template' splits)")
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    versions: list[int | None] = Field(description="weights version per completion id (None: environment or unknown)")
    reward: float
    turns: int
    messages: int = Field(description="messages in the conversation: system, user, assistant and tool")
    stop_reason: str | None = None
    truncated: bool = Field(default=False, description="the rollout was cut by a budget, or the sample by `fit`")
    error: str | None = Field(default=None, description="why the rollout failed: the sample then trains nothing")

    @classmethod
    def failure(
        cls,
        exc: BaseException,
        *,
        prompt_ids: list[int] | None = None,
        env_id: str = "",
        task_id: str = "",
        messages: int = 0,
    ) -> TrainingSample:
        """A sample for a row that failed before any rollout existed (a live hook's bad row, dead server): no
        completion, reward 0, stop reason "error" and the exception as its error."""
        return cls(
            rollout_id="",
            group_id="",
            task_id=task_id,
            env_id=env_id,
            prompt_ids=list(prompt_ids or []),
            completion_ids=[],
            logprobs=[],
            env_mask=[],
            versions=[],
            reward=0.0,
            turns=0,
            messages=messages,
            stop_reason="error",
            error=f"{type(exc).__name__}: {exc}",
        )

    @property
    def failed(self) -> bool:
        return self.error is not None

    def version_range(self) -> tuple[int | None, int | None]:
        """The oldest and newest weights version that sampled an id of this sample (None, None: not tracked)."""
        known = [v for v, m in zip(self.versions, self.env_mask, strict=True) if m and v is not None]
        return (min(known), max(known)) if known else (None, None)

    def fit(self, max_prompt: int | None, max_completion: int | None) -> TrainingSample:
        """The sample within a trainer's budgets, cut as trainers' own agent loops cut: the prompt keeps its last
        `max_prompt` ids, the completion its first `max_completion`; `truncated` says if anything was cut."""
        prompt, cut = self.prompt_ids, False
        if max_prompt is not None and len(prompt) > max_prompt:
            prompt, cut = prompt[len(prompt) - max_prompt :], True
        n = len(self.completion_ids)
        if max_completion is not None and n > max_completion:
            n, cut = max_completion, True
        if not cut:
            return self
        return self.model_copy(
            update={
                "prompt_ids": prompt,
                "completion_ids": self.completion_ids[:n],
                "logprobs": self.logprobs[:n],
                "env_mask": self.env_mask[:n],
                "versions": self.versions[:n],
                "truncated": True,
            }
        )


def training_samples(rollout: Rollout) -> list[TrainingSample]:
    """The rollout's training samples: one, or one per run of turns under history='template'. A failed rollout, or
    one without token ids (a chat engine's), gives one sample whose env_mask is all 0 and whose reward is 0, so a
    trainer that needs a row per prompt keeps its batch shape and learns nothing from it."""
    shared = {
        "rollout_id": rollout.id,
        "group_id": rollout.group_id,
        "task_id": rollout.task_id,
        "env_id": rollout.env_id,
        "turns": len(rollout.turns),
        "messages": len(rollout.messages()),
        "stop_reason": rollout.stop_reason,
        "truncated": rollout.truncated,
    }
    error = _failure(rollout)
    if error is not None:
        view = rollout.token_view() if rollout.token_exact else {"prompt_ids": [], "completion_ids": []}
        n = len(view["completion_ids"])
        return [
            TrainingSample(
                **shared,
                prompt_ids=list(view["prompt_ids"]),
                completion_ids=list(view["completion_ids"]),
                logprobs=[0.0] * n,
                env_mask=[0] * n,
                versions=[None] * n,
                reward=0.0,
                error=error,
            )
        ]
    out = []
    samples = rollout.samples()
    for k, sample in enumerate(samples):
        versions = _versions(rollout, k, len(samples))
        out.append(
            TrainingSample(
                **shared,
                sample=k,
                prompt_ids=sample["prompt_ids"],
                completion_ids=sample["completion_ids"],
                logprobs=sample["logprobs"],
                env_mask=sample["env_mask"],
                versions=versions,
                reward=rollout.reward,
            )
        )
    return out


def _failure(rollout: Rollout) -> str | None:
    if rollout.error is not None:
        return f"{rollout.error.category}: {rollout.error.message}"
    if not rollout.token_exact:
        return "the rollout has no token ids (a chat engine sampled it): nothing to train on"
    return None


def _versions(rollout: Rollout, k: int, count: int) -> list[int | None]:
    """The weights version of each completion id of sample `k` (the same runs of turns `Rollout.samples` cuts)."""
    runs: list[list] = [[]]
    for turn in rollout.turns:
        if turn.resample is not None:
            runs.append([])
        runs[-1].append(turn)
    return concat_turns(runs[k], keep_trailing_bridge=k < count - 1, versions=True)["versions"]


def stored_rollouts(run_dir: str | Path, include_errored: bool = False) -> list[Rollout]:
    """A run directory's rollouts for an offline export, each GRPO group's together (groups in the order they first
    appear, samples by index: rollouts are written as they finish, and SkyRL and OpenRLHF need a group contiguous);
    errored ones only with `include_errored`; none is a `UsageError`."""
    path = Path(run_dir) / ROLLOUTS_FILE
    rollouts = [r for r in read_rollouts(path) if include_errored or r.error is None]
    if not rollouts:
        raise UsageError(f"no exportable rollouts in {path} (errored ones need --include-errored)")
    first: dict[str, int] = {}
    for r in rollouts:
        first.setdefault(r.group_id or r.id, len(first))
    return sorted(rollouts, key=lambda r: (first[r.group_id or r.id], r.sample_index))


def stored_samples(run_dir: str | Path, include_errored: bool = False) -> list[TrainingSample]:
    """The training samples of a run directory's `rollouts.jsonl`, for an offline export: errored rollouts only with
    `include_errored` (then as masked samples with reward 0); a run with none is a `UsageError`."""
    return [s for r in stored_rollouts(run_dir, include_errored) for s in training_samples(r)]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Write one JSON object per line (an export's file) and return its path."""
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
