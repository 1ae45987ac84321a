"""A rollgym sample as the dict OpenRLHF 0.11's agent executors return (`execute`, openrlhf/utils/agent.py:172-185).

OpenRLHF's layout is the whole sequence, unshifted: `observation_tokens` are the prompt, the sampled ids and the
environment's ids in order, `action_ranges` the half-open spans of sampled ids in it, and `rollout_log_probs[t]` the
sampling logprob of token t (0.0 on prompt and environment ids). The trainer shifts by one itself
(`SamplesGenerator._process_response_into_experience`, samples_generator.py:256-269: `action_mask[1:max_len]`,
`rollout_log_probs[1:max_len]`). A failed rollout is a sample with no action range and reward 0: OpenRLHF has no
convention for one (an exception fails the step, a `reward` of None fails its advantage), and a sample without
actions trains nothing.
"""

from __future__ import annotations

from typing import Any

from rollgym.integrations.training_samples import TrainingSample


def fit_to_max_length(sample: TrainingSample, max_length: int | None) -> TrainingSample:
    """The sample within OpenRLHF's `max_len` (prompt and response together), cut as its own loop cuts: the prompt
    keeps its last `max_length - 1` ids (room for one generated id), the sequence its first `max_length` ids;
    `truncated` says if anything was cut."""
    if max_length is None:
        return sample
    fitted = sample.fit(max(1, max_length - 1), None)
    return fitted.fit(None, max(0, max_length - len(fitted.prompt_ids)))


def action_ranges(env_mask: list[int], offset: int) -> list[tuple[int, int]]:
    """The runs of 1 in `env_mask` as half-open `(start, end)` spans, shifted by `offset` (the prompt's length)."""
    ranges: list[tuple[int, int]] = []
    start = None
    for i, m in enumerate([*env_mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            ranges.append((offset + start, offset + i))
            start = None
    return ranges


def executor_output(
    sample: TrainingSample, *, prompt: Any = "", label: Any = "", max_length: int | None = None
) -> dict[str, Any]:
    """`execute`'s return value for one sample. `extra_logs` holds numbers only (OpenRLHF turns each into a tensor,
    samples_generator.py:289-293, and logs their mean); rollgym's provenance is under `rollgym`, which OpenRLHF
    does not read."""
    fitted = fit_to_max_length(sample, max_length)
    oldest, newest = fitted.version_range()
    n_prompt = len(fitted.prompt_ids)
    return {
        "prompt": prompt,
        "label": label,
        "images": None,
        "mm_train_inputs": None,
        "reward": float(fitted.reward),
        "scores": float(fitted.reward),
        "observation_tokens": [*fitted.prompt_ids, *fitted.completion_ids],
        "action_ranges": action_ranges(fitted.env_mask, n_prompt),
        "rollout_log_probs": [0.0] * n_prompt + [float(lp) for lp in fitted.logprobs],
        "truncated": fitted.truncated,
        "extra_logs": {
            "rollgym/turns": float(fitted.turns),
            "rollgym/truncated": float(fitted.truncated),
            "rollgym/failed": float(fitted.failed),
        },
        "rollgym": {
            "rollout_id": fitted.rollout_id,
            "group_id": fitted.group_id,
            "env_id": fitted.env_id,
            "task_id": fitted.task_id,
            "stop_reason": fitted.stop_reason,
            "error": fitted.error,
            "min_policy_version": oldest,
            "max_policy_version": newest,
        },
    }


def openrlhf_rows(samples: list[TrainingSample], *, max_length: int | None = None) -> list[dict[str, Any]]:
    """Offline rows: each sample's executor output with its rollout's task as `prompt` and `label` (the ids OpenRLHF
    trains on are the rollout's own), in GRPO group order (OpenRLHF reshapes rewards by `n_samples_per_prompt`, so a
    group's samples must be contiguous)."""
    ordered = sorted(samples, key=lambda s: s.group_id)
    return [executor_output(s, prompt=s.task_id, label=s.group_id, max_length=max_length) for s in ordered]
