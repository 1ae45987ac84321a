"""rollgym samples as what AReaL 1.0's `RolloutWorkflow.arun_episode` returns (areal/workflow/multi_turn.py and
rlvr.py in the areal 1.0.4 wheel): one trajectory as `[1, L]` rows over the whole sequence (prompt, then every turn),
unshifted, the trainer rolling them by one itself (`PPOActor._compute_advantages`).

AReaL 1.0.4 pins torch < 2.11 (this machine's CPU torch is 2.13), so its own code does not run here: this follows
its field contract. `input_ids` the whole sequence; `loss_mask` 1 on sampled ids, 0 on prompt and tool ids;
`logprobs` the sampling logprob of each sampled id, 0.0 elsewhere; `versions` the weights version of each sampled id,
-1 elsewhere (and -1 where unknown); `attention_mask` all 1; `rewards` the trajectory's reward. A failed rollout is
`None`, AReaL's way to reject a trajectory (`RolloutWorkflow.arun_episode` docstring).
"""

from __future__ import annotations

from typing import Any

from rollgym.integrations.training_samples import TrainingSample

#: the keys AReaL's `WorkflowExecutor` requires (input_ids, rewards, loss_mask, attention_mask) and the two it reads
EPISODE_KEYS = ("input_ids", "loss_mask", "logprobs", "versions", "attention_mask", "rewards")


def episode_rows(sample: TrainingSample) -> dict[str, Any] | None:
    """The trajectory as lists (`[1, L]` rows and a `[1]` reward); None for a failed rollout (AReaL rejects it)."""
    if sample.failed:
        return None
    prompt = len(sample.prompt_ids)
    return {
        "input_ids": [sample.prompt_ids + sample.completion_ids],
        "loss_mask": [[0] * prompt + sample.env_mask],
        "logprobs": [[0.0] * prompt + sample.logprobs],
        "versions": [
            [-1] * prompt
            + [v if (m and v is not None) else -1 for v, m in zip(sample.versions, sample.env_mask, strict=True)]
        ],
        "attention_mask": [[1] * (prompt + len(sample.completion_ids))],
        "rewards": [float(sample.reward)],
    }


def episode_tensors(sample: TrainingSample) -> dict[str, Any] | None:
    """`episode_rows` as the torch tensors AReaL's workflows return (int32 ids, masks and versions, float32 logprobs
    and rewards, a bool attention mask)."""
    import torch

    rows = episode_rows(sample)
    if rows is None:
        return None
    dtypes = {
        "input_ids": torch.int32,
        "loss_mask": torch.int32,
        "logprobs": torch.float32,
        "versions": torch.int32,
        "attention_mask": torch.bool,
        "rewards": torch.float32,
    }
    return {key: torch.tensor(value, dtype=dtypes[key]) for key, value in rows.items()}
