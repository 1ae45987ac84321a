"""`rg.from_trl_environment(factory)`: an environment written for TRL's `environment_factory` run in rollgym's loop
(token-exact, recorded, viewable, in batches like any rollgym environment).

Each episode makes a fresh instance (`factory()`), calls `reset(**task)` and builds the first messages as TRL does
(the task's `prompt`, the observation appended); the instance's tool methods are the episode's tools (their schemas
from their signatures and docstrings, rollgym's `ToolSet`: the same information TRL reads); a reply without a tool
call ends the episode, which `get_reward()` scores (0 when the class has none).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from rollgym.envs.core.env import Env
from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import UsageError
from rollgym.integrations.trl.env_protocol import tool_methods, with_observation


async def _call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """A TRL method, sync (in a thread: it may block) or async."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


class TRLEnvironment(Env):
    """A rollgym `Env` around one instance of a TRL-style environment class (made by `from_trl_environment`)."""

    trl_factory: staticmethod[[], Any]  # set by from_trl_environment, a staticmethod in the class's dict

    def __init__(self) -> None:
        self.trl = type(self).trl_factory()
        if not callable(getattr(self.trl, "reset", None)):
            raise UsageError(f"{type(self.trl).__name__} has no reset(): TRL's environment protocol requires one")
        super().__init__(tools=tool_methods(self.trl))

    async def setup(self, task: dict[str, Any] | None) -> tuple[list[dict], dict[str, Any]]:
        row = dict(task or {})
        observation = await _call(self.trl.reset, **row)
        if observation is not None and not isinstance(observation, str):
            raise UsageError(
                f"{type(self.trl).__name__}.reset() returned {type(observation).__name__}: TRL's protocol allows None or a string"
            )
        return with_observation(row.get("prompt"), observation), {"task_id": task_id_of(row)}

    async def compute_reward(self) -> tuple[float, dict[str, float]]:
        get_reward = getattr(self.trl, "get_reward", None)
        if get_reward is None:
            return 0.0, {}
        reward = float(await _call(get_reward))
        return reward, {type(self.trl).__name__: reward}


def from_trl_environment(factory: Callable[[], Any], *, name: str | None = None) -> type[TRLEnvironment]:
    """A rollgym environment class (a factory for `rg.rollout`, `rg.run_rollouts`, `rg.generate`,
    `rg.AsyncRolloutWorker`) running the TRL-style environment `factory()` makes."""
    label = name or getattr(factory, "__name__", type(factory).__name__)
    return type(f"TRL_{label}", (TRLEnvironment,), {"trl_factory": staticmethod(factory), "__module__": __name__})
