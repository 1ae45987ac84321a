"""Rollouts as TRL's `RolloutSample`s (`trl.experimental.async_grpo`, TRL 1.16): one per rollout, token-exact.

`input_ids` is the prompt then the completion exactly as the engine saw and sampled it (`Rollout.token_view()`),
`completion_mask` is 0 on the prompt and 1 on sampled tokens (the environment's tokens 0), `old_log_probs` holds each
sampled token's sampling logprob at its own position (0 elsewhere), which is where TRL's packer reads them
(`TreeRow.pack`: the logprob of the token at position p). The advantage is GRPO's, over the group's scored rewards
(TRL's own worker: `(r - mean) / (std + 1e-8)`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from rollgym.rollouts.records import Rollout


def group_advantages(rewards: list[float | None]) -> list[float]:
    """GRPO advantages of one group: each scored reward's distance from the group mean in standard deviations;
    0 for an unscored one (None), which then carries no gradient."""
    scored = [r for r in rewards if r is not None and not math.isnan(r)]
    if not scored:
        return [0.0] * len(rewards)
    mean = sum(scored) / len(scored)
    std = math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored))
    return [0.0 if r is None or math.isnan(r) else (r - mean) / (std + 1e-8) for r in rewards]


def trainable(rollout: Rollout) -> bool:
    """Whether the rollout has a sampled token to train on (TRL's loss needs one per sample)."""
    return any(turn.completion_ids for turn in rollout.turns)


def to_sample(
    rollout: Rollout, *, advantage: float, group_id: int, model_version: int, metrics: dict[str, float]
) -> Any:
    """The `RolloutSample` TRL's trainer consumes, for one rollout."""
    from trl.experimental.async_grpo.async_rollout_worker import RolloutSample

    view = rollout.token_view()
    prompt = view["prompt_ids"]
    return RolloutSample(
        prompt=list(rollout.initial_messages),
        completion=rollout.messages()[len(rollout.initial_messages) :],
        input_ids=np.asarray(prompt + view["completion_ids"], dtype=np.int64),
        completion_mask=np.asarray([0] * len(prompt) + view["env_mask"], dtype=np.int64),
        old_log_probs=np.asarray([0.0] * len(prompt) + view["logprobs"], dtype=np.float32),
        advantage=float(advantage),
        model_version=int(model_version),
        group_id=int(group_id),
        metrics=dict(metrics),
        enqueued_at=time.time(),
    )
