"""A finished GRPO group's rewards: the trainer's reward functions called as TRL calls them, summed.

TRL calls each reward function with `prompts`, `completions`, `completion_ids` and the dataset's columns; here the
columns are the task row's and the rollouts' own (`to_trl_columns`: `reward`, `reward_<component>`, `rollgym_<metric>`,
`rollgym_error`), so `rg.env_reward` (the environment's reward) and `rg.component_reward(name)` work as they do
with `GRPOTrainer`. A function may be async and may return None for a sample it cannot score; a sample no function
scored is unscored (None).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from rollgym.errors import UsageError
from rollgym.integrations.trl.rollout_func import to_trl_columns
from rollgym.rollouts.records import Rollout

RewardFunc = Callable[..., Any]


def reward_name(func: RewardFunc) -> str:
    return str(getattr(func, "__name__", type(func).__name__))


async def score_group(
    rollouts: Sequence[Rollout], task: dict, reward_funcs: Sequence[RewardFunc], pad_id: int
) -> tuple[list[float | None], dict[str, list[float | None]]]:
    """Each rollout's total reward (None when unscored) and each function's own values, by function name."""
    columns: dict[str, list] = to_trl_columns(list(rollouts), pad_id)
    for key, value in task.items():
        columns.setdefault(key, [value] * len(rollouts))
    kwargs = {
        **columns,
        "prompts": [list(r.initial_messages) for r in rollouts],
        "completions": [r.messages()[len(r.initial_messages) :] for r in rollouts],
    }
    per_func: dict[str, list[float | None]] = {}
    for func in reward_funcs:
        if inspect.iscoroutinefunction(func):
            values = await func(**kwargs)
        else:  # in a thread: a slow reward function (a judge, a test run) never holds up the rollouts
            values = await asyncio.to_thread(func, **kwargs)
            if inspect.isawaitable(values):  # a callable object with an async __call__
                values = await values
        values = list(values)
        if len(values) != len(rollouts):
            raise UsageError(
                f"reward function {reward_name(func)} returned {len(values)} values for {len(rollouts)} samples"
            )
        per_func[reward_name(func)] = [None if v is None else float(v) for v in values]
    totals: list[float | None] = []
    for i in range(len(rollouts)):
        got = [v for v in (values[i] for values in per_func.values()) if v is not None]
        totals.append(sum(got) if got else None)
    return totals, per_func
