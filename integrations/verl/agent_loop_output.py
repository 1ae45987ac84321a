"""A rollgym sample as verl 0.9's `AgentLoopOutput` (verl/experimental/agent_loop/agent_loop.py), as plain fields.

verl's layout is response-only and unshifted: `response_ids` are everything after the prompt (sampled and tool ids),
`response_mask` is 1 on sampled ids, `response_logprobs[i]` is the sampling logprob of `response_ids[i]` (0.0 on tool
ids); verl pads the prompt on the left and the response on the right and does not cut them, so an agent loop fits
them to `rollout.prompt_length` / `rollout.response_length` itself (the prompt keeps its end, the response its
start, as verl's `ToolAgentLoop` cuts). A failed rollout is a fully masked sample with reward 0: verl has no way to
drop one sample from a batch.
"""

from __future__ import annotations

from typing import Any

from rollgym.integrations.training_samples import TrainingSample


def agent_loop_fields(
    sample: TrainingSample,
    *,
    prompt_length: int | None = None,
    response_length: int | None = None,
    metrics: dict[str, float] | None = None,
) -> dict[str, Any]:
    """`AgentLoopOutput(**fields)`'s fields. `reward_score` is set, so verl computes no reward of its own;
    `extra_fields` carry the weights versions verl reads (`min_global_steps`, `max_global_steps`) and rollgym's
    provenance (`rollgym_*`)."""
    fitted = sample.fit(prompt_length, response_length)
    oldest, newest = fitted.version_range()
    return {
        "prompt_ids": fitted.prompt_ids,
        "response_ids": fitted.completion_ids,
        "response_mask": fitted.env_mask,
        "response_logprobs": fitted.logprobs,
        "reward_score": float(fitted.reward),
        "num_turns": fitted.messages,
        "metrics": {"generate_sequences": 0.0, "tool_calls": 0.0, "compute_score": 0.0, **(metrics or {})},
        "extra_fields": {
            "min_global_steps": oldest,
            "max_global_steps": newest,
            "turn_scores": [],
            "tool_rewards": [],
            "rollgym_rollout_id": fitted.rollout_id,
            "rollgym_env_id": fitted.env_id,
            "rollgym_task_id": fitted.task_id,
            "rollgym_stop_reason": fitted.stop_reason,
            "rollgym_truncated": fitted.truncated,
            "rollgym_error": fitted.error,
        },
    }


def verl_rows(
    samples: list[TrainingSample], *, prompt_length: int | None = None, response_length: int | None = None
) -> list[dict[str, Any]]:
    """Offline rows: each sample's `AgentLoopOutput` fields plus `uid`, the GRPO group verl's advantage groups by."""
    return [
        {"uid": s.group_id, **agent_loop_fields(s, prompt_length=prompt_length, response_length=response_length)}
        for s in samples
    ]
