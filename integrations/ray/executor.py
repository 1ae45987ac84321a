"""`RayExecutor`: the core's `Executor` on Ray actors (`run_rollouts(ray=...)`, `rollgym generate --ray`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.integrations.ray.config import RayConfig, as_ray_config
from rollgym.rollouts.jobs import OnResult, RolloutJob, RunSpec, env_factory_for


class RayExecutor:
    """Runs a call's jobs on Ray actors as `config` says (a local instance, or a cluster's address)."""

    def __init__(self, config: RayConfig) -> None:
        self.config = config

    @classmethod
    def from_options(cls, ray: Any, workers: int = 1) -> RayExecutor:
        """From `run_rollouts`' `ray=` (a `RayConfig`, an address, True) and `workers=` (actors on a local instance)."""
        config = as_ray_config(ray, workers)
        return cls(config if config is not None else RayConfig(actors=workers))

    async def run(self, spec: RunSpec, jobs: Sequence[RolloutJob], *, concurrency: int, on_result: OnResult) -> None:
        from rollgym.integrations.ray.dispatch import run_jobs_on_ray

        env_factory_for(spec.env, **(spec.env_kwargs or {}))  # fail fast here, not in every actor
        await run_jobs_on_ray(spec, list(jobs), config=self.config, concurrency=concurrency, on_result=on_result)
