"""The worker's event loop: GRPO groups produced without end, scored, and pushed to the trainer as samples.

Each group is one call of an executor, the one batch path every run takes: the local executor shared by every group
(at most `concurrency` rollouts at once across them; a new group starts as soon as there is room for it, so the
engine never waits for a group's slowest rollout), or Ray's. Locally each rollout runs as the core runs a job
(`run_job`: its own environment, its own seed) in a task of its own (`StaleRestarts`), so it can be stopped alone:
when the trainer's version moves past a running rollout's oldest token by more than `max_staleness`, that rollout
is aborted (its environment released by the loop's cancellation path), written to `out` as what it was, and run
again. A group is scored once
all its rollouts are in, and its samples go to the trainer together (`outbox.Outbox`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import UsageError
from rollgym.integrations.trl.async_grpo.config import AsyncRolloutConfig
from rollgym.integrations.trl.async_grpo.environments import Envs
from rollgym.integrations.trl.async_grpo.outbox import Outbox
from rollgym.limits import Limits
from rollgym.rollouts.jobs import (
    Executor,
    LocalExecutor,
    RolloutJob,
    RunSpec,
    failed_job,
    prepare_tasks,
    run_job,
)
from rollgym.rollouts.live import watch
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import AsyncWorkerRecord, ErrorRecord, Rollout
from rollgym.rollouts.versions import oldest_version


@dataclass
class Live:
    """A rollout running now: its task, what it has done so far (published by the loop), and why it was stopped."""

    task: asyncio.Task
    holder: list[Rollout]
    started_version: int
    aborted: bool = False


async def _watched(
    holder: list[Rollout], factory: Callable[[], Any], env_id: str, job: RolloutJob, spec: RunSpec
) -> Rollout:
    """`run_job`, its rollout published into `holder` as it runs (in this task's context only)."""
    watch(holder)
    return await run_job(factory, env_id, job, spec)


class StaleRestarts:
    """A `JobRunner` for the local executor: each job run as the core runs it (`run_job`, through the worker's own
    job runner if it has one), in a task the producer can abort when it goes stale; an aborted run is recorded and
    started again. Closing it closes nothing: the worker closes its job runner when it stops."""

    def __init__(self, producer: Producer, factory: Callable[[], Any], env_id: str, inner: RunSpec) -> None:
        self.producer, self.factory, self.env_id, self.inner = producer, factory, env_id, inner

    async def __call__(self, job: RolloutJob, spec: RunSpec) -> Rollout:
        return await self.producer.rollout(self.factory, self.env_id, job, self.inner)

    async def close(self) -> None:
        return None


class Producer:
    """Runs in the worker's thread, on its event loop; `run()` until `stopping` is set."""

    def __init__(
        self,
        *,
        envs: Envs,
        tasks: Sequence[dict],
        policy: Policy,
        limits: Limits | None,
        sampling: Any,
        env_kwargs: dict | None,
        job_runner: Any,
        config: AsyncRolloutConfig,
        trainer_version: Callable[[], int],
        outbox: Outbox,
        executor: Executor | None = None,
        remote_policy: Policy | None = None,
    ) -> None:
        if not tasks:
            raise UsageError("the rollout worker needs at least one task")
        self.envs, self.tasks, self.policy = envs, list(tasks), policy
        self.limits, self.sampling, self.env_kwargs, self.job_runner = limits, sampling, env_kwargs, job_runner
        self.config, self.trainer_version, self.outbox = config, trainer_version, outbox
        self.executor, self.remote_policy = executor, remote_policy or policy
        self.local = LocalExecutor(limit=config.concurrency)  # one bound across every group's call
        self.live: dict[tuple[int, int], Live] = {}
        self.stopped: list[Rollout] = []
        self._groups = 0
        self._first_version: int | None = None  # lockstep's count: versions reached, samples pushed, groups running
        self._pushed = self._running = 0

    # --- the main loop ------------------------------------------------------------------------------
    async def run(self, stopping: asyncio.Event) -> None:
        """Keep groups running until `stopping`; a group's own failure (a reward function that raises) ends the run."""
        n = self.config.num_generations
        room = max(1, math.ceil(self.config.concurrency / n))
        running: set[asyncio.Task] = set()
        try:
            while not stopping.is_set():
                while len(running) < room and not stopping.is_set() and self._may_start():
                    gid = self._groups
                    self._groups += 1
                    self._running += 1  # counted now: the next `_may_start` must see it
                    running.add(asyncio.create_task(self.group(gid, self.tasks[gid % len(self.tasks)])))
                if not running:  # lockstep: this version's groups are done, the trainer has not moved yet
                    await asyncio.sleep(0.05)
                    continue
                done, _ = await asyncio.wait(running, timeout=0.1, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.discard(task)
                    task.result()
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            for rollout in self.stopped:
                self.outbox.record(rollout, "stopped")

    def _may_start(self) -> bool:
        """Always, unless paced (`samples_per_version`): then only while the samples pushed and the running groups
        fall short of one step's worth per version the trainer reached, `versions_ahead` steps ahead (TRL's data
        loader, accelerate's `DataLoaderDispatcher`, fetches the next batch before it trains on the current one). A
        group may push fewer than `num_generations` samples (its failures), so pushed samples are what count."""
        per_version = self.config.samples_per_version
        if per_version is None:
            return True
        version = self.trainer_version()
        if self._first_version is None:
            self._first_version = version
        allowed = (version - self._first_version + 1 + self.config.versions_ahead) * per_version
        return self._pushed + self._running * self.config.num_generations < allowed

    async def group(self, gid: int, task: dict) -> None:
        """One GRPO group: its rollouts, its rewards, its samples pushed together."""
        key = self.envs.key(task)
        factory, env_id = self.envs.factories[key]
        spec = RunSpec(
            env=self.envs.specs[key],
            policy=self.policy,
            limits=self.limits,
            sampling=self.sampling,
            group_prefix=f"g{gid}/",
            env_kwargs=self.env_kwargs,
            job_runner=self.job_runner,
        )
        jobs = [RolloutJob(gid, task_id_of(task, gid), k, task) for k in range(self.config.num_generations)]
        try:
            unprepared = await self._prepare(key, task)
            if unprepared is not None:
                rollouts = [failed_job(job, env_id, spec.group_prefix, unprepared) for job in jobs]
            elif self.executor is not None:
                rollouts = await self._on_executor(gid, jobs, spec)
            else:
                local = RunSpec(**{**spec.__dict__, "job_runner": StaleRestarts(self, factory, env_id, spec)})
                rollouts = await self._run(self.local, local, jobs)
            pushed = await self.outbox.push(gid, task, rollouts, in_flight=len(self.live))
            self._pushed += pushed  # after the await: `+= await` would add to a count read before another group's
        finally:
            self._running -= 1

    async def _on_executor(self, gid: int, jobs: list[RolloutJob], spec: RunSpec) -> list[Rollout]:
        """The group as one call of another executor (Ray actors): each actor builds its own engine from the
        policy, which stamps each turn with the version it follows (`ray.versions`); a rollout that goes stale
        there runs to its end, then `stale` applies to it."""
        started, executor = self.trainer_version(), self.executor
        assert executor is not None  # the caller checked
        remote = RunSpec(**{**spec.__dict__, "policy": self.remote_policy})
        rollouts = await self._run(executor, remote, jobs)
        for rollout in rollouts:
            rollout.async_worker = AsyncWorkerRecord(group=gid, started_version=started)
        return rollouts

    @staticmethod
    async def _run(executor: Executor, spec: RunSpec, jobs: list[RolloutJob]) -> list[Rollout]:
        """A group as one call of `executor`: its rollouts in sample order."""
        results: dict[int, Rollout] = {}
        await executor.run(
            spec, jobs, concurrency=len(jobs), on_result=lambda _ti, si, rollout: results.__setitem__(si, rollout)
        )
        return [results[k] for k in sorted(results)]

    async def _prepare(self, key: str | None, task: dict) -> BaseException | None:
        """The environment's `prepare_tasks` for a task, once (its image pulled or built): why it cannot run, if so."""
        task_id = task_id_of(task)
        if task_id not in self.envs.prepared:
            failures = await asyncio.to_thread(prepare_tasks, self.envs.specs[key], [task], self.env_kwargs)
            self.envs.prepared[task_id] = failures.get(task_id)
        return self.envs.prepared[task_id]

    # --- one rollout, restarted while it goes stale --------------------------------------------------
    async def rollout(self, factory: Callable[[], Any], env_id: str, job: RolloutJob, spec: RunSpec) -> Rollout:
        """Run `job` to its end; a run aborted for staleness is recorded and started again (the executor's bound
        holds the job's slot through its restarts)."""
        while True:
            holder: list[Rollout] = []
            started = self.trainer_version()
            task = asyncio.create_task(_watched(holder, factory, env_id, job, spec))
            live = self.live[job.key] = Live(task, holder, started)
            try:
                rollout = await asyncio.shield(task)
            except asyncio.CancelledError:
                if not live.aborted:  # the worker stops: cancel the rollout, keep what it did
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    self.stopped += self._partial(live, "the trainer stopped the rollout worker")
                    raise
                await asyncio.gather(task, return_exceptions=True)
                for partial in self._partial(live, "aborted: its oldest token went over max_staleness"):
                    self.outbox.record(partial, "aborted_stale")
                self.outbox.metrics.count("aborted_stale")
                continue
            finally:
                self.live.pop(job.key, None)
            rollout.async_worker = AsyncWorkerRecord(group=job.task_index, started_version=started)
            return rollout

    def _partial(self, live: Live, why: str) -> list[Rollout]:
        """What a stopped rollout had done, as an errored record (`internal`: rollgym stopped it, not the policy)."""
        if not live.holder:
            return []
        rollout = live.holder[-1]
        rollout.stop_reason = "error"
        rollout.error = ErrorRecord(category="internal", type="RolloutStopped", message=why, turn=len(rollout.turns))
        rollout.async_worker = AsyncWorkerRecord(started_version=live.started_version)
        return [rollout]

    def enforce_staleness(self) -> None:
        """Abort every running rollout whose oldest token is now more than `max_staleness` versions behind."""
        bound = self.config.max_staleness
        if bound is None or not self.config.restart_stale:
            return
        current = self.trainer_version()
        for live in self.live.values():
            oldest = oldest_version(live.holder[-1]) if live.holder else None
            if oldest is not None and current - oldest > bound and not live.aborted and not live.task.done():
                live.aborted = True
                live.task.cancel()
