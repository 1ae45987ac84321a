"""The worker's environments by name: one unnamed, or several that each task picks with its `environment` field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import UsageError
from rollgym.rollouts.jobs import env_factory_for

#: The task field that picks the environment when the worker was given several by name (as TRL's own `environment`).
ENV_FIELD = "environment"


@dataclass
class Envs:
    """The worker's environments by name (one unnamed, or several a task picks with its `environment` field)."""

    factories: dict[str | None, tuple[Callable[[], Any], str]]
    specs: dict[str | None, Any]
    prepared: dict[str, BaseException | None] = field(default_factory=dict)

    @classmethod
    def build(cls, env: Any, env_kwargs: dict | None) -> Envs:
        named: dict[str | None, Any] = dict(env) if isinstance(env, dict) else {None: env}
        return cls({k: env_factory_for(v, **(env_kwargs or {})) for k, v in named.items()}, named)

    def key(self, task: dict) -> str | None:
        if None in self.factories:
            return None
        name = task.get(ENV_FIELD)
        if name not in self.factories:
            raise UsageError(
                f"task {task_id_of(task)!r} names environment {name!r}; the worker has {sorted(str(k) for k in self.factories)}"
            )
        return name
