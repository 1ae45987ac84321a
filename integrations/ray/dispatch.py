"""The driver of a distributed run: hands out jobs on demand, streams results back, survives dead actors.

Each actor runs `slots` rollouts and holds a few more queued; it is topped up once its queue is used up,
so no actor idles while another works through a long tail. Results arrive in batches as they finish
and go to `on_result` exactly as in one process. A dead actor (or node): the rollouts it held run again
elsewhere, up to `max_retries` times, then are recorded as errored rollouts (`internal`/`WorkerDied`,
naming the node); its unsent jobs go to the others. When every actor is gone and no new one can be
placed, or the cluster's head stops answering for `head_timeout_s`, `ClusterLostError`: the rollouts never
run are not written, so a resumed run does them.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from rollgym.errors import ClusterLostError, WorkerStartError
from rollgym.integrations.ray.actor import decode
from rollgym.integrations.ray.actor_spec import ActorSpec, prefetch_for, split_slots
from rollgym.integrations.ray.cluster import head_lost, off_loop
from rollgym.integrations.ray.config import RayConfig
from rollgym.integrations.ray.ledger import drop_owner, end_ledger
from rollgym.integrations.ray.pool import Member, acquire, forget, release
from rollgym.rollouts.jobs import OnResult, RolloutJob, RunSpec, job_rollout
from rollgym.rollouts.records import ErrorRecord, Rollout

#: How long stopping actors may take, together, to release their environments.
STOP_GRACE_S = 120.0
#: How many times a run replaces a whole lost set of actors before giving up.
MAX_REPLACEMENTS = 2


def errored(job: RolloutJob, env_id: str, group_prefix: str, kind: str, why: str) -> Rollout:
    """An errored rollout (`internal` category) for a job the infrastructure lost."""
    return job_rollout(job, env_id, group_prefix, ErrorRecord(category="internal", type=kind, message=why))


class _Run:
    """One call's bookkeeping: pending jobs, what each actor holds, retries."""

    def __init__(
        self, jobs: list[RolloutJob], config: RayConfig, env_id: str, group_prefix: str, on_result: OnResult
    ) -> None:
        self.pending: deque[RolloutJob] = deque(jobs)
        self.config, self.env_id, self.group_prefix = config, env_id, group_prefix
        self.total, self.reported = len(jobs), 0
        self.gone: str | None = None  # why the whole cluster is lost (its head stopped answering)
        self.call = ""  # names the call's placement ledger, if its actors made one
        self.background: set[asyncio.Future] = set()

        def report(ti: int, si: int, rollout: Rollout) -> None:
            self.reported += 1
            on_result(ti, si, rollout)

        self.on_result = report
        self.attempts: dict[tuple[int, int], int] = {}
        self.held: dict[int, dict[tuple[int, int], RolloutJob]] = {}
        self.live: dict[int, Member] = {}
        self.slots: dict[int, int] = {}
        self.ended: set[int] = set()

    def fill(self, i: int) -> None:
        """Top up actor `i` once its queue is used up."""
        member, held, slots = self.live[i], self.held[i], self.slots[i]
        if self.pending and len(held) <= slots:
            chunk = [
                self.pending.popleft() for _ in range(min(len(self.pending), slots + prefetch_for(slots) - len(held)))
            ]
            held.update((j.key, j) for j in chunk)
            member.actor.give.remote(chunk)

    def fill_all(self) -> None:
        """Top up every actor; once nothing is pending or held anywhere (nothing can come back), tell each `end`."""
        for i in list(self.live):
            self.fill(i)
        if not self.pending and not any(self.held.values()):
            for i, member in self.live.items():
                if i not in self.ended:
                    self.ended.add(i)
                    member.actor.end.remote(self.slots[i])

    def lost(self, i: int, exc: BaseException) -> None:
        """Actor `i` died: retry what it held, or record it as `WorkerDied` naming the node."""
        member = self.live.pop(i)
        where = member.where
        if where.get("actor_id"):  # its sandboxes' slots in the cluster-wide count are free
            task = asyncio.ensure_future(off_loop(drop_owner, self.call, where["actor_id"]))
            self.background.add(task)
            task.add_done_callback(self.background.discard)
        why = (
            f"the Ray actor on node {where.get('node_ip', '?')} (node id {str(where.get('node_id', '?'))[:16]}, "
            f"pid {where.get('pid', '?')}) died before finishing this rollout: {type(exc).__name__}"
        )
        for key, job in self.held.pop(i, {}).items():
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if self.attempts[key] <= self.config.max_retries:
                self.pending.appendleft(job)
            else:
                self.on_result(key[0], key[1], errored(job, self.env_id, self.group_prefix, "WorkerDied", why))


async def run_jobs_on_ray(
    run_spec: RunSpec, jobs: list[RolloutJob], *, config: RayConfig, concurrency: int, on_result: OnResult
) -> None:
    """Run `jobs` on Ray actors, at most `concurrency` rollouts at once in all; report every result as it arrives.
    Raises `WorkerStartError` when an actor cannot build the engine or environment, `ClusterLostError` when
    every actor is gone or the cluster's head has not answered for `config.head_timeout_s`."""
    if not jobs:
        return
    from rollgym.integrations.ray.cluster import connect, head_of, import_ray

    env = run_spec.env
    env_id = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    ray = import_ray()
    connect(config, config.actors or _local_cpus())
    run = _Run(jobs, config, env_id, run_spec.group_prefix, on_result)
    head, task = head_of(ray, config), asyncio.current_task()
    assert task is not None  # a coroutine runs in its task
    watch = asyncio.create_task(_watch_head(run, head, task)) if head is not None else None
    try:
        spec = ActorSpec(run_spec, call=uuid.uuid4().hex[:12])
        run.call = spec.call
        await _dispatch(ray, run, spec, concurrency)
    except (asyncio.CancelledError, Exception):
        if run.gone is None:
            raise
        task.uncancel()
        raise ClusterLostError(run.gone) from None
    finally:
        if watch is not None:
            watch.cancel()


async def _watch_head(run: _Run, head: tuple[str, int], task: asyncio.Task) -> None:
    """Cancel the run once the cluster's head has stopped answering (Ray's own driver would wait 60 s, then
    end the process with no word of what was written)."""
    silent_s = await head_lost(head, run.config.head_timeout_s)
    where = f"the Ray cluster at {run.config.address}" if run.config.address else "the local Ray instance"
    run.gone = (
        f"{where} stopped answering: its head ({head[0]}:{head[1]}) has not accepted a "
        f"connection for {silent_s:.0f} s. {run.reported} of {run.total} rollouts finished; the other "
        f"{run.total - run.reported} were not written: the output is resumable (run the same command "
        "with --resume once the cluster is back, or on another)"
    )
    task.cancel()


async def _dispatch(ray: Any, run: _Run, spec: ActorSpec, concurrency: int) -> None:
    config = run.config
    cpus = (await off_loop(ray.cluster_resources)).get("CPU", 1) if config.actors is None else 0
    wanted = config.actors or max(1, int(cpus // max(config.num_cpus, 1e-9)))
    shares = split_slots(concurrency, min(wanted, run.total))
    spec_ref = ray.put(spec)
    members = await _start(config, spec_ref, len(shares))
    replacements = 0
    try:
        while True:
            first = len(run.slots)  # `concurrency` shared out over the actors that did start
            for k, (member, share) in enumerate(zip(members, split_slots(concurrency, len(members)), strict=False)):
                run.live[first + k], run.held[first + k], run.slots[first + k] = member, {}, share
            try:
                async with asyncio.TaskGroup() as streams:  # one failing stream (an on_result that raises) ends all
                    for i in list(run.live)[-len(members) :]:
                        streams.create_task(_consume(run, i))
                    run.fill_all()
            except BaseExceptionGroup as group:
                raise group.exceptions[0] from None  # the caller sees the error itself, as in one process
            if not run.pending and not any(run.held.values()):
                return
            if replacements >= MAX_REPLACEMENTS:
                raise ClusterLostError(
                    f"every rollout actor was lost and {replacements} new sets died too; "
                    f"{len(run.pending)} rollouts were not run (a --resume runs them)"
                )
            replacements += 1
            run.ended.clear()
            try:
                members = await _start(config, spec_ref, len(shares), fresh=True)
            except ClusterLostError as exc:
                raise ClusterLostError(
                    f"every rollout actor was lost and no new one could be placed ({exc}); "
                    f"{len(run.pending)} rollouts were not run: the output is resumable "
                    "(run the same command with --resume)"
                ) from None
    except BaseException:
        if run.gone is None:  # on a lost cluster nothing answers: stopping would wait out STOP_GRACE_S
            await asyncio.shield(_stop(list(run.live.values())))
        raise
    finally:
        if run.gone is None:
            await asyncio.shield(release(config, list(run.live.values())))
            with contextlib.suppress(Exception):  # a ledger left over ends itself once idle (ledger.IDLE_S)
                await asyncio.shield(asyncio.wait_for(off_loop(end_ledger, run.call), 30))
        else:
            forget(config)


async def _consume(run: _Run, i: int) -> None:
    """Read actor `i`'s stream until it ends; on its death hand its jobs back (or record them lost)."""
    member = run.live[i]
    try:
        async for payload in _payloads(member, run.slots[i]):
            for item in decode(payload):
                if not isinstance(item, tuple):  # a sandbox it started or ended: into the run's record
                    _record(item)
                    continue
                ti, si, rollout = item
                run.held[i].pop((ti, si), None)
                run.on_result(ti, si, rollout)
            if run.pending and len(run.held[i]) <= run.slots[i]:
                run.fill(i)
            elif not run.pending:
                run.fill_all()
    except Exception as exc:
        if not _is_death(exc):
            raise
        run.lost(i, exc)
        run.fill_all()  # its retried jobs go to whoever has room


def _record(event: Any) -> None:
    """Write an actor's sandbox event into the record this run writes (envs/sandbox/record.py), if it writes one."""
    from rollgym.envs.sandbox.record import current

    sink = current()
    if sink is not None:
        sink(event)


async def _payloads(member: Member, slots: int) -> AsyncIterator[Any]:
    """An actor's batches of finished rollouts as they come: streamed, or pulled by a driver on Ray Client."""
    if not through_client():
        async for ref in member.actor.serve.options(num_returns="streaming").remote(slots):
            yield await ref
        return
    await member.actor.open.remote(slots)
    while (payloads := await member.actor.pull.remote()) is not None:
        for payload in payloads:
            yield payload


def through_client() -> bool:
    """Whether this driver is on Ray Client (`ray://`), which has no streaming methods (ray-project/ray#43357)."""
    from ray.util.client import ray as client

    return client.is_connected()


def _is_death(exc: BaseException) -> bool:
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    return isinstance(exc, (ActorDiedError, ActorUnavailableError, RayActorError))


async def _start(config: RayConfig, spec_ref: Any, n: int, fresh: bool = False) -> list[Member]:
    """`n` actors set up with this call's spec, started concurrently (warm ones from the pool first)."""
    import ray

    members = await acquire(config, n, fresh=fresh)
    setups = [asyncio.ensure_future(m.actor.setup.remote(spec_ref)) for m in members]
    try:
        await asyncio.wait(setups, timeout=config.start_timeout_s)  # actors the cluster has no room for are left out
    except BaseException:  # cancelled while starting (Ctrl-C): no actor outlives the call
        for member in members:
            ray.kill(member.actor)
        raise
    alive = []
    for member, setup in zip(members, setups, strict=True):
        if not setup.done():
            setup.cancel()
            ray.kill(member.actor)
            continue
        if setup.exception() is not None and not _is_death(setup.exception()):
            await _stop(members)
            raise WorkerStartError(f"a rollout actor could not start:\n{setup.exception()}") from None
        if setup.exception() is None:
            member.where = setup.result()
            alive.append(member)
    if not alive:
        raise ClusterLostError(f"no rollout actor could start on the cluster within {config.start_timeout_s:g} s")
    return alive


async def _stop(members: list[Member]) -> None:
    """Cancel every rollout of every live actor; each releases its environments (bounded by STOP_GRACE_S)."""
    if not members:
        return
    await asyncio.wait([asyncio.ensure_future(m.actor.stop.remote()) for m in members], timeout=STOP_GRACE_S)


def _local_cpus() -> int:
    import os

    return os.cpu_count() or 1
