"""Jobs and executors: a batch is a list of `RolloutJob`s, and an `Executor` runs them (in this event loop, or on
Ray actors through `rollgym.integrations.ray`) and reports each rollout as it finishes.

The core knows executors only through the `Executor` protocol and the names in `EXECUTORS`, which are loaded
on first use: it never imports an integration (the import contract in pyproject.toml checks it).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rollgym.engines.base import SamplingParams
from rollgym.envs.core.wrappers import inner_env, inner_env_and_step_limit
from rollgym.errors import UsageError
from rollgym.limits import Limits
from rollgym.rollouts.loop import run_rollout
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import ErrorRecord, Rollout, errored_rollout

EnvFactory = Callable[[], Any]
#: Called with (task index, sample index, rollout) as each rollout finishes.
OnResult = Callable[[int, int, Rollout], None]


@dataclass(frozen=True, slots=True)
class RolloutJob:
    """One (task, sample) of a batch: the row, where it sits in the batch, and the id resume and groups match on."""

    task_index: int
    task_id: str
    sample_index: int
    task: dict
    group: str | None = None  # the group's id when it is not the call's prefix + the task id (TRL's prompt groups)

    @property
    def key(self) -> tuple[int, int]:
        """(task index, sample index): unique within a batch."""
        return self.task_index, self.sample_index

    def group_id(self, prefix: str = "") -> str:
        """The id of the GRPO group this job's rollout belongs to."""
        return self.group if self.group is not None else f"{prefix}{self.task_id}"


@dataclass
class RunSpec:
    """What every job of one call runs with: the environment, the policy and the options (pickled once per call
    for remote executors: a policy made from a spec travels as its spec)."""

    env: str | EnvFactory | None  # None: the job runner needs no environment (an agent callable run as it is)
    policy: Policy
    limits: Limits | None
    sampling: SamplingParams
    group_prefix: str = ""
    env_kwargs: dict | None = None
    job_runner: JobRunner | None = None  # runs each job instead of the rollout loop (an agent CLI: agents/jobs.py)


class JobRunner(Protocol):
    """Runs one job its own way (picklable: Ray actors get a copy); `close` frees what it opened in this process."""

    async def __call__(self, job: RolloutJob, spec: RunSpec) -> Rollout: ...

    async def close(self) -> None: ...


class Executor(Protocol):
    """Runs a call's jobs, at most `concurrency` rollouts at once, and calls `on_result` for every job exactly once
    (an errored rollout for a job it lost); raises only for what ends the whole call (cancellation, a lost cluster)."""

    async def run(
        self, spec: RunSpec, jobs: Sequence[RolloutJob], *, concurrency: int, on_result: OnResult
    ) -> None: ...


def env_factory_for(env: str | EnvFactory | None, **env_kwargs: Any) -> tuple[EnvFactory, str]:
    """An environment factory and id from a registered id (`rollgym/Calculator-v0`) or a callable; None (jobs a
    runner runs with no environment) gives a factory that refuses to be called."""
    if env is None:
        return _no_environment, ""
    if isinstance(env, str):
        from rollgym.envs import make

        probe = make(env, **env_kwargs)  # fail fast on unknown ids, with the registry's suggestions
        try:
            inner_env_and_step_limit(probe)  # and on a wrapper rollgym cannot apply (a registered one), naming it
        finally:
            probe.close()
        return (lambda: make(env, **env_kwargs)), env
    if not callable(env):
        raise UsageError(f"env must be a registered id or a factory (a class or function), got {type(env).__name__}")
    return env, getattr(env, "__name__", type(env).__name__)


def prepare_tasks(
    env: str | EnvFactory | None, tasks: Sequence[dict], env_kwargs: dict | None = None
) -> dict[str, BaseException]:
    """The environment's `prepare_tasks` on a batch's tasks (their images pulled or built before any rollout
    starts): the task ids that cannot run, with why. A factory that is not an `Env` class prepares nothing."""
    if env is None:
        return {}
    if isinstance(env, str):
        from rollgym.envs import make

        instance = make(env, **(env_kwargs or {}))
        try:
            cls = type(inner_env(instance))
        finally:
            instance.close()
    else:
        cls = env
    prepare = getattr(cls, "prepare_tasks", None)
    if not isinstance(cls, type) or prepare is None:
        return {}
    return prepare(list(tasks), log=lambda _m: None)


def job_rollout(job: RolloutJob, env_id: str, group_prefix: str, error: ErrorRecord) -> Rollout:
    """The rollout of a job that never ran an episode, recorded as `error` in its group."""
    return errored_rollout(
        error,
        env_id=env_id,
        task_id=job.task_id,
        group_id=job.group_id(group_prefix),
        sample_index=job.sample_index,
    )


def failed_job(job: RolloutJob, env_id: str, group_prefix: str, exc: BaseException) -> Rollout:
    """The rollout of a job whose task could not be prepared or run: recorded as that failure, never run."""
    return job_rollout(job, env_id, group_prefix, ErrorRecord.of(exc))


def sample_seed(seed: int | None, task_index: int, sample_index: int) -> int | None:
    """A distinct, reproducible seed per (task, sample), so the samples of a group differ."""
    return None if seed is None else (seed * 1_000_003 + task_index * 10_007 + sample_index * 101) % 2**63


async def run_job(factory: EnvFactory, env_id: str, job: RolloutJob, spec: RunSpec) -> Rollout:
    """One (task, sample): a fresh environment, one episode, its seed derived from the pair; never raises (but on cancel)."""
    group = job.group_id(spec.group_prefix)
    if spec.job_runner is not None:
        try:
            rollout = await spec.job_runner(job, spec)
        except Exception as exc:  # noqa: BLE001 - a runner that fails is one errored rollout, not a crashed batch
            rollout = failed_job(job, env_id, spec.group_prefix, exc)
        rollout.task_id = job.task_id
        return rollout
    try:
        instance = factory()
    except Exception as exc:  # noqa: BLE001 - a broken factory is one errored rollout, not a crashed batch
        rollout = failed_job(job, env_id, spec.group_prefix, exc)
    else:
        seed = sample_seed(spec.sampling.seed, job.task_index, job.sample_index)
        try:
            rollout = await run_rollout(
                instance,
                spec.policy,
                job.task,
                limits=spec.limits,
                env_id=env_id,
                group_id=group,
                sample_index=job.sample_index,
                sampling=spec.sampling.model_copy(update={"seed": seed}),
            )
        except UsageError as exc:  # a wrapper rollgym cannot apply (refused before the episode): this job's error
            with contextlib.suppress(Exception):
                instance.close()
            rollout = failed_job(job, env_id, spec.group_prefix, exc)
    if rollout.task_id and rollout.task_id != job.task_id:  # the row's id is what resume and groups match on
        rollout.env_task_id = rollout.task_id
    rollout.task_id = job.task_id
    return rollout


def _no_environment() -> Any:
    raise UsageError("this call has no environment: only a job runner can run its jobs")


#: Rollouts admitted per turn of the event loop. Each starts with a burst of work that does not wait (its environment
#: reset, its prompt rendered) before its first request; admitting them all in one turn of the loop kept it from
#: answering anything else for as long as thousands of those bursts took (seconds at 65,000 rollouts).
ADMITTED_PER_TICK = 64


def env_name(env: str | EnvFactory | None) -> str:
    """The id a call's rollouts record for `env`: a registered id as it is, a factory's name, "" for none."""
    if env is None or isinstance(env, str):
        return env or ""
    return getattr(env, "__name__", type(env).__name__)


class LocalExecutor:
    """Every job in this event loop, at most `concurrency` at once per call, and at most `limit` at once across all the
    calls that share this executor (an asynchronous trainer's worker runs each GRPO group as a call).

    Jobs are admitted as slots free up, at most `ADMITTED_PER_TICK` per turn of the event loop: a batch holds
    `concurrency` rollout tasks at a time, not one per job, and the loop stays responsive while a large batch starts.
    """

    limit: int | None = None
    _shared: asyncio.Semaphore | None = None

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 1:
            raise UsageError("an executor's limit must be >= 1")
        self.limit = limit
        self._shared: asyncio.Semaphore | None = None  # made in the event loop of the first call

    async def run(self, spec: RunSpec, jobs: Sequence[RolloutJob], *, concurrency: int, on_result: OnResult) -> None:
        spec.policy.engine  # noqa: B018 - an engine that cannot be built fails the call, not every rollout
        if spec.job_runner is not None:  # the runner makes what its jobs need
            factory, env_id = _no_environment, env_name(spec.env)
        else:
            assert spec.env is not None  # run_rollouts refuses a call with neither
            factory, env_id = env_factory_for(spec.env, **(spec.env_kwargs or {}))
        if self.limit is not None and self._shared is None:
            self._shared = asyncio.Semaphore(self.limit)
        shared, gate = self._shared, asyncio.Semaphore(concurrency)

        async def one(job: RolloutJob) -> None:
            try:
                if shared is None:
                    rollout = await run_job(factory, env_id, job, spec)
                else:
                    async with shared:
                        rollout = await run_job(factory, env_id, job, spec)
                on_result(job.task_index, job.sample_index, rollout)
            finally:
                gate.release()

        try:
            async with asyncio.TaskGroup() as group:
                for admitted, job in enumerate(jobs, 1):
                    await gate.acquire()
                    group.create_task(one(job))
                    if admitted % ADMITTED_PER_TICK == 0:
                        await asyncio.sleep(0)  # let the rollouts just admitted (and everything else) run
        finally:
            if spec.job_runner is not None:
                await spec.job_runner.close()


#: Executors a call asks for by name, as "module:callable" loaded on first use; the callable takes (ray, workers),
#: the arguments of `run_rollouts`. `ray=` or `workers > 1` ask for "ray".
EXECUTORS: dict[str, str] = {"ray": "rollgym.integrations.ray.executor:RayExecutor.from_options"}


def executor_for(executor: Executor | None = None, *, ray: Any = None, workers: int = 1) -> Executor:
    """The executor a call runs on: the one given, else Ray's when `ray` is set or `workers > 1`, else local."""
    if executor is not None:
        if ray not in (None, False) or workers != 1:
            raise UsageError("pass either executor= or ray=/workers=, not both")
        return executor
    if (ray is None or ray is False) and workers == 1:
        return LocalExecutor()
    module, _, attr = EXECUTORS["ray"].partition(":")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    return target(ray, workers)
