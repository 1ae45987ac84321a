"""What rollgym drives for a gymnasium-wrapped environment: the wrapped `Env`, with its wrappers honoured or refused.

rollgym drives an environment through its async API (`areset`/`astep`), which gymnasium's wrappers do not see. So
the wrappers `gymnasium.make` adds and that change nothing here (the passive checker, the order enforcer) are passed
through, a `TimeLimit` becomes a step limit the rollout loop keeps, and any other wrapper is refused with a
`UsageError` naming it: never silently dropped.
"""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

from rollgym.errors import UsageError

#: Wrappers `gymnasium.make` adds that change nothing for an environment driven through its async API: the checker
#: only warns on the sync API, and the loop always resets before it steps.
PASSED_THROUGH: tuple[type, ...] = (PassiveEnvChecker, OrderEnforcing)


def inner_env_and_step_limit(env: Any) -> tuple[Any, int | None]:
    """The environment under `env`'s gymnasium wrappers, and the step limit of a `TimeLimit` among them (None
    without one; the smallest when several). Raises `UsageError` naming any other wrapper."""
    limit: int | None = None
    layer = env
    while isinstance(layer, gymnasium.Wrapper):
        kind = type(layer)
        if kind is TimeLimit:
            steps = int(layer._max_episode_steps)  # pyright: ignore[reportAttributeAccessIssue]  # TimeLimit keeps it there
            limit = steps if limit is None else min(limit, steps)
        elif kind not in PASSED_THROUGH:
            raise UsageError(
                f"{kind.__module__}.{kind.__qualname__} wraps this environment, but rollgym drives environments "
                "through their async API (areset/astep), which gymnasium wrappers do not see, so it cannot apply it. "
                "Put that logic in your Env subclass instead (compute_reward for a reward; setup, its tools or "
                "on_text_reply for what the model sees and does); a step limit is `max_episode_steps=` or `max_turns`."
            )
        layer = layer.env
    return layer, limit


def inner_env(env: Any) -> Any:
    """The environment under `env`'s gymnasium wrappers, for a caller that does not run its episodes (listing tasks,
    checking the contract); refuses the wrappers rollgym cannot apply, as `inner_env_and_step_limit` does."""
    return inner_env_and_step_limit(env)[0]
