"""rollgym samples as SkyRL 0.4's `GeneratorOutput` (skyrl/train/generators/base.py), as plain lists.

SkyRL's layout is response-only and unshifted, as its `SkyRLGymGenerator` builds it: `response_ids` are everything
after the prompt (sampled and observation ids), `loss_masks` 1 on sampled ids, `rollout_logprobs[i]` the sampling
logprob of `response_ids[i]` (0.0 on observation ids), one scalar reward per sample (SkyRL puts it on the last
response token). SkyRL does not cut a response (it only warns above `max_seq_len`), so the generator fits each sample
to `max_generate_length` itself. A failed rollout keeps its row with loss mask 0, reward 0 and stop reason "error":
SkyRL needs one output per input row, and at least one response id in it (its trainer puts the reward on the last).
"""

from __future__ import annotations

from typing import Any

from rollgym.integrations.training_samples import TrainingSample

#: rollgym stop reasons SkyRL's filters treat as cut short (`apply_overlong_filtering`, `zero_reward_on_non_stop`)
CUT_SHORT = {"max_turns", "env_truncated", "context_limit", "token_budget", "truncated_completion", "timeout"}


def stop_reason(sample: TrainingSample) -> str:
    """SkyRL's stop reason: 'stop' for an episode that ended, 'length' for one a budget cut, 'error' for a failure."""
    if sample.failed:
        return "error"
    return "length" if sample.truncated or sample.stop_reason in CUT_SHORT else "stop"


def generator_output(
    samples: list[TrainingSample],
    *,
    max_response: int | None = None,
    trajectory_ids: list[Any] | None = None,
    filler_id: int = 0,
) -> dict[str, Any]:
    """`GeneratorOutput`'s required fields for `samples` (in the input batch's order), responses cut at
    `max_response`; `rollout_metrics` carries rollgym's counts and the weights versions SkyRL has no field for. A
    sample with no ids (a row that failed before its first turn) gets one `filler_id` (masked) on each side."""
    fitted = [_filled(s.fit(None, max_response), filler_id) for s in samples]
    versions = [s.version_range() for s in fitted]
    return {
        "prompt_token_ids": [s.prompt_ids for s in fitted],
        "response_ids": [s.completion_ids for s in fitted],
        "rewards": [float(s.reward) for s in fitted],
        "loss_masks": [s.env_mask for s in fitted],
        "stop_reasons": [stop_reason(s) for s in fitted],
        "rollout_logprobs": [s.logprobs for s in fitted],
        "trajectory_ids": trajectory_ids,
        "rollout_metrics": {
            "rollgym/failed": float(sum(s.failed for s in fitted)),
            "rollgym/truncated": float(sum(s.truncated for s in fitted)),
            "rollgym/oldest_version": min((v[0] for v in versions if v[0] is not None), default=None),
            "rollgym/newest_version": max((v[1] for v in versions if v[1] is not None), default=None),
        },
    }


def _filled(sample: TrainingSample, filler_id: int) -> TrainingSample:
    if sample.prompt_ids and sample.completion_ids:
        return sample
    update: dict[str, Any] = {"prompt_ids": sample.prompt_ids or [filler_id]}
    if not sample.completion_ids:
        update.update(completion_ids=[filler_id], logprobs=[0.0], env_mask=[0], versions=[None])
    return sample.model_copy(update=update)
