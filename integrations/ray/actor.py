"""`RolloutActor`: a Ray actor with its own event loop that runs its share of a call's rollouts.

It builds the environment factory and the policy's engine from an `ActorSpec` (`setup`), then `serve`
runs `slots` jobs at once as the driver `give`s them, each exactly as in one process (`jobs.run_job`),
and streams the finished rollouts back in batches (what finished within a few milliseconds of each other).
A driver on Ray Client (`ray://`), which cannot read a streaming method, calls `open` then `pull` in a
loop instead: the same batches, one long-polled call each. `stop` cancels every rollout; each releases its
environment before `stop` returns. The sandboxes the rollouts start and end ride along in the same batches (their
`SandboxEvent`s, envs/sandbox/record.py), so the driver writes them into the run's record as they happen.
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any, TypeAlias

from rollgym.integrations.ray.actor_spec import ActorSpec
from rollgym.rollouts.jobs import RolloutJob, env_factory_for, run_job
from rollgym.rollouts.records import Rollout

if TYPE_CHECKING:
    from rollgym.envs.sandbox.record import SandboxEvent

Result = tuple[int, int, Rollout]  # (task index, sample index, rollout)
#: What a batch holds: finished rollouts, and the sandboxes started or ended meanwhile.
Item: TypeAlias = "Result | SandboxEvent"
_STOPPED = object()
#: How long a finished rollout may wait for others to go back with it in one streamed batch.
COALESCE_S = 0.005
#: How long a stopping actor waits for sandbox creations and removals still running in threads.
SETTLE_S = 60.0


def encode(batch: list[Item]) -> bytes | list[Item]:
    """A batch as one pickle (Ray's own serializer, cloudpickle, costs several times more per rollout);
    a batch the standard pickler cannot take goes as it is, for cloudpickle."""
    try:
        return pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - anything pickle refuses goes to cloudpickle
        return batch


def decode(payload: bytes | list[Item]) -> list[Item]:
    return pickle.loads(payload) if isinstance(payload, bytes) else payload


def tune_gc() -> None:
    """Freeze the heap built by the imports (collections then scan the run's objects only), and collect the
    youngest generation every 20,000 allocations (a rollout allocates thousands of short-lived containers)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)


class RolloutActor:
    """One process of a distributed run; reusable across calls (`setup` again with the next call's spec)."""

    def __init__(self) -> None:
        import rollgym.envs  # noqa: F401 - the registry and builtin environments, before the freeze

        tune_gc()
        self._spec: ActorSpec | None = None
        self._inbox: asyncio.Queue | None = None
        self._slots: list[asyncio.Task] = []
        self._done: asyncio.Queue | None = None
        self._out: asyncio.Queue | None = None
        self._pump: asyncio.Task | None = None
        self._shared = None  # the call's placement ledger, once shared

    def where(self) -> dict[str, Any]:
        """This actor's node (id and address) and process, for errors that name it."""
        import ray

        ctx = ray.get_runtime_context()
        return {
            "node_id": ctx.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "actor_id": ctx.get_actor_id(),
        }

    def _share_placements(self) -> None:
        """Place sandboxes by the call's cluster-wide count (`ledger.py`), from this call's first rollout on
        (imports the sandbox package, 0.35 s once per process, whether or not the environment uses it: an
        environment may import it only once it runs, and a count that starts late is wrong)."""
        import ray

        from rollgym.envs.sandbox import hosts
        from rollgym.integrations.ray.ledger import RayLedger

        spec = self._spec
        assert spec is not None  # setup() set it first
        owner = ray.get_runtime_context().get_actor_id()
        assert owner is not None  # this runs in a Ray actor, which has an id
        self._shared = RayLedger(spec.call, owner)
        hosts.share(self._shared)

    async def setup(self, spec: ActorSpec) -> dict[str, Any]:
        """Build this call's environment factory and engine (a bad spec fails here, not in every rollout)."""
        await self.close()
        self._factory, self._env_id = env_factory_for(spec.run.env, **(spec.run.env_kwargs or {}))
        spec.run.policy.engine  # noqa: B018 - building the engine here fails the call, not each rollout
        self._spec = spec
        self._inbox, self._done, self._slots = asyncio.Queue(), asyncio.Queue(), []
        self._share_placements()
        return self.where()

    async def give(self, jobs: list[RolloutJob]) -> None:
        inbox = self._inbox
        assert inbox is not None  # setup() made it
        for job in jobs:
            inbox.put_nowait(job)

    async def end(self, slots: int) -> None:
        """No more jobs: each slot finishes what it holds, then `serve` ends."""
        inbox = self._inbox
        assert inbox is not None  # setup() made it
        for _ in range(slots):
            inbox.put_nowait(None)

    async def serve(self, slots: int) -> AsyncIterator[bytes | list[Item]]:
        """Run jobs `slots` at once until `end` (or `stop`); yield finished rollouts as they come."""
        batches = self._batches(slots)
        try:
            async for payload in batches:
                yield payload
        finally:
            await batches.aclose()

    async def open(self, slots: int) -> None:
        """`serve` for a driver that pulls (Ray Client has no streaming methods): batches queue up for `pull`."""
        self._out = out = asyncio.Queue()

        async def pump() -> None:
            try:
                async for payload in self._batches(slots):
                    out.put_nowait(payload)
            finally:
                out.put_nowait(None)

        self._pump = asyncio.create_task(pump())

    async def pull(self) -> list[bytes | list[Item]] | None:
        """Every batch finished since the last call, waiting for at least one; None once the run has ended
        (or what ended it, raised)."""
        out = self._out
        assert out is not None  # open() made it
        items = [await out.get()]
        while not out.empty():
            items.append(out.get_nowait())
        if items[-1] is not None:
            return items
        out.put_nowait(None)  # the end answers every later call too
        if items[:-1]:
            return items[:-1]
        pump = self._pump
        if pump is not None and pump.done() and not pump.cancelled():
            failure = pump.exception()
            if failure is not None:
                raise failure
        return None

    async def _batches(self, slots: int) -> AsyncGenerator[bytes | list[Item], None]:
        spec, done, inbox = self._spec, self._done, self._inbox
        assert spec is not None and done is not None and inbox is not None  # setup() set them

        async def slot() -> None:
            try:
                while (job := await inbox.get()) is not None:
                    rollout = await run_job(self._factory, self._env_id, job, spec.run)
                    done.put_nowait((job.task_index, job.sample_index, rollout))
            finally:
                done.put_nowait(None)

        from rollgym.envs.sandbox.record import recording

        loop = asyncio.get_running_loop()

        def forward(event: SandboxEvent) -> None:  # from worker threads too: sandboxes start and end in them
            loop.call_soon_threadsafe(done.put_nowait, event)

        with recording(forward):  # each slot's task (and the threads it starts) inherits the sink
            self._slots = [asyncio.create_task(slot()) for _ in range(slots)]
        ended, stopped, want = 0, False, max(1, slots // 8)
        try:
            while ended < slots and not stopped:
                batch = []
                item = await done.get()
                deadline = asyncio.get_running_loop().time() + COALESCE_S
                while True:
                    if item is None:
                        ended += 1
                    elif item is _STOPPED:
                        stopped = True
                    else:
                        batch.append(item)
                    if done.empty():
                        wait = deadline - asyncio.get_running_loop().time()
                        if len(batch) >= want or ended >= slots or stopped or wait <= 0:
                            break
                        try:  # a few more results ride along: each streamed item costs the driver ~1 ms
                            item = await asyncio.wait_for(done.get(), wait)
                        except TimeoutError:
                            break
                        continue
                    item = done.get_nowait()
                if batch:
                    yield encode(batch)
        finally:
            await self._cancel_slots()

    async def stop(self) -> None:
        """Cancel every rollout; return once each has released its environment, and every sandbox this process
        was still creating or removing in a thread is gone (the driver ends this process next, with no atexit)."""
        await self._cancel_slots()
        if "rollgym.envs.sandbox.lifecycle" in sys.modules:
            from rollgym.envs.sandbox.lifecycle import settle

            await asyncio.to_thread(settle, SETTLE_S)
        if self._done is not None:
            self._done.put_nowait(_STOPPED)

    async def _cancel_slots(self) -> None:
        for task in self._slots:
            task.cancel()
        await asyncio.gather(*self._slots, return_exceptions=True)

    async def close(self) -> None:
        """Release this call's engine (an actor kept warm builds the next call's in `setup`)."""
        await self._cancel_slots()
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
            self._pump = None
        if self._shared is not None:
            from rollgym.envs.sandbox import hosts

            hosts.share(None)
            self._shared = None
        if self._spec is not None:
            spec, self._spec = self._spec, None
            if spec.run.job_runner is not None:  # e.g. the recording proxy an agent runner started here
                await spec.run.job_runner.close()
            await spec.run.policy.aclose()
