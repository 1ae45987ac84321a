"""rollgym samples as slime's `Sample` (slime/utils/types.py at THUDM/slime 624b824, setup.py 0.3.1), as the dict of
its fields: what a `--custom-generate-function-path` function returns, or `Sample(**fields)` builds.

slime is not on PyPI (`pip install slime` is an unrelated package) and its trainer needs sglang and Megatron, so its
own code does not run here: this follows its field contract. `tokens` are prompt + response; the response side is
response-only and unshifted, as `Sample.append_response_tokens` builds it: `loss_mask` 1 on sampled ids and 0 on tool
ids, `rollout_log_probs[i]` the sampling logprob of response id i (0.0 on tool ids), both `response_length` long;
`weight_versions` one string per engine call that reported a version; `status` "completed", "truncated" (slime's
`truncated` flag, from a budget) or "failed"; a failed rollout is `remove_sample=True`, which slime's
`_convert_samples_to_train_data` turns into a zeroed loss mask.
"""

from __future__ import annotations

from typing import Any

from rollgym.integrations.training_samples import TrainingSample

#: `Sample`'s fields at slime 624b824 that rollgym fills (the others keep slime's defaults)
SAMPLE_FIELDS = (
    "group_index",
    "index",
    "prompt",
    "tokens",
    "response_length",
    "label",
    "reward",
    "loss_mask",
    "weight_versions",
    "rollout_log_probs",
    "remove_sample",
    "status",
    "metadata",
)
#: rollgym stop reasons slime calls truncated (its `Sample.Status.TRUNCATED`: a length limit cut the sample)
TRUNCATED = {"max_turns", "env_truncated", "context_limit", "token_budget", "truncated_completion", "timeout"}


def slime_sample(
    sample: TrainingSample, *, index: int, group_index: int, prompt: Any = "", max_response: int | None = None
) -> dict[str, Any]:
    """One `Sample`'s fields (`status` as its enum's value) for `sample`, the response cut at `max_response`."""
    fitted = sample.fit(None, max_response)
    calls: list[str] = []
    for version, mask in zip(fitted.versions, fitted.env_mask, strict=True):
        if mask and version is not None and (not calls or calls[-1] != str(version)):
            calls.append(str(version))
    if fitted.failed:
        status = "failed"
    elif fitted.truncated or fitted.stop_reason in TRUNCATED:
        status = "truncated"
    else:
        status = "completed"
    return {
        "group_index": group_index,
        "index": index,
        "prompt": prompt,
        "tokens": fitted.prompt_ids + fitted.completion_ids,
        "response_length": len(fitted.completion_ids),
        "label": None,
        "reward": float(fitted.reward),
        "loss_mask": fitted.env_mask,
        "weight_versions": calls,
        "rollout_log_probs": fitted.logprobs,
        "remove_sample": fitted.failed,
        "status": status,
        "metadata": {
            "rollgym_rollout_id": fitted.rollout_id,
            "rollgym_task_id": fitted.task_id,
            "rollgym_env_id": fitted.env_id,
            "rollgym_stop_reason": fitted.stop_reason,
            "rollgym_error": fitted.error,
        },
    }


def slime_samples(samples: list[TrainingSample], *, max_response: int | None = None) -> list[dict[str, Any]]:
    """`Sample` fields for a batch: `group_index` numbers the GRPO groups in order of appearance, `index` the rows."""
    groups: dict[str, int] = {}
    return [
        slime_sample(s, index=i, group_index=groups.setdefault(s.group_id, len(groups)), max_response=max_response)
        for i, s in enumerate(samples)
    ]
