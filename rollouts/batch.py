"""`run_rollouts`: groups of n samples per task (the GRPO group), bounded concurrency, cancellation-safe."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from rollgym.engines.base import SamplingParams
from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import UsageError
from rollgym.limits import Limits, as_limits
from rollgym.rollouts.jobs import (
    EnvFactory,
    Executor,
    JobRunner,
    RolloutJob,
    RunSpec,
    executor_for,
    failed_job,
    prepare_tasks,
)
from rollgym.rollouts.loop import check_sampling
from rollgym.rollouts.policy import Policy, as_policy
from rollgym.rollouts.records import Rollout
from rollgym.rollouts.tasks import task_rows


async def run_rollouts(
    env: str | EnvFactory | None,
    tasks: Iterable[dict],
    policy: Policy | str,
    *,
    n: int = 1,
    concurrency: int = 8,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    skip: set[tuple[str, int]] | frozenset = frozenset(),
    on_result: Callable[[Rollout], None] | None = None,
    group_prefix: str = "",
    env_kwargs: dict | None = None,
    workers: int = 1,
    keep: bool = True,
    ray: Any = None,
    executor: Executor | None = None,
    job_runner: JobRunner | None = None,
) -> list[Rollout]:
    """Run `n` rollouts per task with at most `concurrency` environments alive; return them in task order.

    `policy` is a `Policy` or its spec string (then this call builds it, and closes its engine at the end).
    `on_result` is called as each rollout finishes (e.g. to append it to a file). `skip` holds
    (task id, sample index) pairs already done (resume). Cancelling this coroutine cancels every
    rollout, and each releases its environment before the cancellation propagates.
    `ray` runs them on Ray actors (see `rollgym.integrations.ray`): a `RayConfig`, a cluster address
    (`"auto"`, `"ray://head:10001"`) or True (a local Ray instance); `workers > 1` alone means that many
    actors on a local Ray instance. Each actor builds its own engine from the policy's spec (a network
    engine such as a vLLM server is shared). `executor` runs them on any `Executor` instead. `keep=False`
    returns nothing and keeps nothing (long offline runs stream through `on_result` in constant memory).
    `job_runner` runs each job instead of the rollout loop (agents: `rollgym.run_agents`); `env` None: its jobs need
    no environment.
    """
    if n < 1 or concurrency < 1 or workers < 1:
        raise UsageError("n, concurrency and workers must be >= 1")
    if env is None and job_runner is None:
        raise UsageError("run_rollouts needs an environment (an id or a factory) unless a job runner runs the jobs")
    runner = executor_for(executor, ray=ray, workers=workers)
    sampling, limits, tasks = check_sampling(sampling), as_limits(limits), task_rows(tasks)
    policy, owned = as_policy(policy)
    jobs = [RolloutJob(ti, task_id_of(task, ti), si, task) for ti, task in enumerate(tasks) for si in range(n)]
    jobs = [j for j in jobs if (j.task_id, j.sample_index) not in skip]
    results: dict[tuple[int, int], Rollout] = {}

    def collect(ti: int, si: int, rollout: Rollout) -> None:
        if keep:
            results[(ti, si)] = rollout
        if on_result is not None:
            on_result(rollout)

    spec = RunSpec(
        env=env,
        policy=policy,
        limits=limits,
        sampling=sampling,
        group_prefix=group_prefix,
        env_kwargs=env_kwargs,
        job_runner=job_runner,
    )
    distinct = list({job.task_id: job.task for job in jobs}.values())
    unprepared = await asyncio.to_thread(prepare_tasks, env, distinct, env_kwargs) if jobs else {}
    if unprepared:  # e.g. an image no registry serves: recorded at once, the rest of the batch goes on
        env_id = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
        for job in [j for j in jobs if j.task_id in unprepared]:
            collect(job.task_index, job.sample_index, failed_job(job, env_id, group_prefix, unprepared[job.task_id]))
        jobs = [j for j in jobs if j.task_id not in unprepared]
    try:
        await runner.run(spec, jobs, concurrency=concurrency, on_result=collect)
    finally:
        if owned:
            await policy.aclose()
    return [results[k] for k in sorted(results)]
