"""`run_rollouts`: groups of n samples per task (the GRPO group), bounded concurrency, cancellation-safe."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import UsageError

from .engines.base import SamplingParams
from .limits import Limits
from .loop import check_sampling, env_failure_category, run_rollout
from .policy import Policy, as_policy
from .records import ErrorRecord, Rollout

EnvFactory = Callable[[], Any]


def env_factory_for(env: str | EnvFactory, **env_kwargs) -> tuple[EnvFactory, str]:
    """An environment factory and id from a registered id (`rollgym/Calculator-v0`) or a callable."""
    if isinstance(env, str):
        from rollgym.envs import make

        make(env, **env_kwargs).close()  # fail fast on unknown ids, with the registry's suggestions
        return (lambda: make(env, **env_kwargs).unwrapped), env
    if not callable(env):
        raise UsageError(f"env must be a registered id or a factory (a class or function), got {type(env).__name__}")
    return env, getattr(env, "__name__", type(env).__name__)


def sample_seed(seed: int | None, task_index: int, sample_index: int) -> int | None:
    """A distinct, reproducible seed per (task, sample), so the samples of a group differ."""
    return None if seed is None else (seed * 1_000_003 + task_index * 10_007 + sample_index * 101) % 2**63


Job = tuple[int, str, int, dict]  # (task index, task id, sample index, task)


async def run_rollouts(env: str | EnvFactory, tasks: Iterable[dict], policy: Policy | str, *,
                       n: int = 1, concurrency: int = 8, limits: Limits | None = None,
                       sampling: SamplingParams | None = None, skip: set[tuple[str, int]] | frozenset = frozenset(),
                       on_result: Callable[[Rollout], None] | None = None, group_prefix: str = "",
                       env_kwargs: dict | None = None, workers: int = 1, keep: bool = True,
                       ray: Any = None) -> list[Rollout]:
    """Run `n` rollouts per task with at most `concurrency` environments alive; return them in task order.

    `policy` is a `Policy` or its spec string (then this call builds it, and closes its engine at the end).
    `on_result` is called as each rollout finishes (e.g. to append it to a file). `skip` holds
    (task id, sample index) pairs already done (resume). Cancelling this coroutine cancels every
    rollout, and each releases its environment before the cancellation propagates.
    `ray` runs them on Ray actors (see `rollgym.rollouts.distributed`): a `RayConfig`, a cluster address
    (`"auto"`, `"ray://head:10001"`) or True (a local Ray instance); `workers > 1` alone means that many
    actors on a local Ray instance. Each actor builds its own engine from the policy's spec (a network
    engine such as a vLLM server is shared). `keep=False` returns nothing and keeps nothing (long offline
    runs stream through `on_result` in constant memory).
    """
    if n < 1 or concurrency < 1 or workers < 1:
        raise UsageError("n, concurrency and workers must be >= 1")
    from .distributed.config import as_ray_config

    ray_config = as_ray_config(ray, workers)
    sampling = check_sampling(sampling)
    policy, owned = as_policy(policy)
    jobs: list[Job] = [(ti, task_id_of(task, ti), si, task) for ti, task in enumerate(tasks) for si in range(n)]
    jobs = [j for j in jobs if (j[1], j[2]) not in skip]
    results: dict[tuple[int, int], Rollout] = {}

    def collect(ti: int, si: int, rollout: Rollout) -> None:
        if keep:
            results[(ti, si)] = rollout
        if on_result is not None:
            on_result(rollout)

    options = dict(limits=limits, sampling=sampling, group_prefix=group_prefix, env_kwargs=env_kwargs)
    try:
        if ray_config is not None:
            from .distributed.dispatch import run_jobs_on_ray

            env_factory_for(env, **(env_kwargs or {}))  # fail fast here, not in every actor
            await run_jobs_on_ray(env, jobs, policy, config=ray_config, concurrency=concurrency,
                                  on_result=collect, **options)
        else:
            policy.engine  # noqa: B018 - an engine that cannot be built fails the call, not every rollout
            await run_jobs(env, jobs, policy, concurrency=concurrency, on_result=collect, **options)
    finally:
        if owned:
            await policy.aclose()
    return [results[k] for k in sorted(results)]


async def run_job(factory: EnvFactory, env_id: str, job: Job, policy: Policy, *, limits: Limits | None,
                  sampling: SamplingParams, group_prefix: str = "") -> Rollout:
    """One (task, sample): a fresh environment, one episode, its seed derived from the pair; never raises (but on cancel)."""
    ti, tid, si, task = job
    group = f"{group_prefix}{tid}"
    try:
        instance = factory()
    except Exception as exc:  # a broken factory is one errored rollout, not a crashed batch
        rollout = Rollout(env_id=env_id, task_id=tid, group_id=group, sample_index=si, stop_reason="error",
                          error=ErrorRecord(category=env_failure_category(exc), type=type(exc).__name__, message=str(exc)))
    else:
        rollout = await run_rollout(instance, policy, task, limits=limits, env_id=env_id, group_id=group,
                                    sample_index=si, sampling=sampling.model_copy(update={"seed": sample_seed(sampling.seed, ti, si)}))
    if rollout.task_id and rollout.task_id != tid:  # the row's id is what resume and groups match on
        rollout.meta["env_task_id"] = rollout.task_id
    rollout.task_id = tid
    return rollout


async def run_jobs(env: str | EnvFactory, jobs: list[Job], policy: Policy, *, concurrency: int, limits: Limits | None,
                   sampling: SamplingParams, on_result: Callable[[int, int, Rollout], None], group_prefix: str = "",
                   env_kwargs: dict | None = None) -> None:
    """Run jobs in this event loop, at most `concurrency` at once; report each as it finishes."""
    factory, env_id = env_factory_for(env, **(env_kwargs or {}))
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> None:
        async with gate:
            rollout = await run_job(factory, env_id, job, policy, limits=limits, sampling=sampling,
                                    group_prefix=group_prefix)
            on_result(job[0], job[2], rollout)

    async with asyncio.TaskGroup() as group:
        for job in jobs:
            group.create_task(one(job))
