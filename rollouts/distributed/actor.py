"""`RolloutActor`: a Ray actor with its own event loop that runs its share of a call's rollouts.

It builds the environment factory and the policy's engine from an `ActorSpec` (`setup`), then `serve`
runs `slots` jobs at once as the driver `give`s them, each exactly as in one process (`batch.run_job`),
and streams the finished rollouts back in batches (whatever finished since the last one). `stop`
cancels every rollout; each releases its environment before `stop` returns.
"""

from __future__ import annotations

import asyncio
import gc
import os
from typing import Any, AsyncIterator

from ..batch import Job, env_factory_for, run_job
from ..records import Rollout
from .spec import ActorSpec

Result = tuple[int, int, Rollout]  # (task index, sample index, rollout)
_STOPPED = object()


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

    def where(self) -> dict[str, Any]:
        """This actor's node (id and address) and process, for errors that name it."""
        import ray

        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address(), "pid": os.getpid()}

    async def setup(self, spec: ActorSpec) -> dict[str, Any]:
        """Build this call's environment factory and engine (a bad spec fails here, not in every rollout)."""
        await self.close()
        self._factory, self._env_id = env_factory_for(spec.env, **(spec.env_kwargs or {}))
        spec.policy.engine  # noqa: B018
        self._spec = spec
        self._inbox, self._done, self._slots = asyncio.Queue(), asyncio.Queue(), []
        return self.where()

    async def give(self, jobs: list[Job]) -> None:
        for job in jobs:
            self._inbox.put_nowait(job)

    async def end(self, slots: int) -> None:
        """No more jobs: each slot finishes what it holds, then `serve` ends."""
        for _ in range(slots):
            self._inbox.put_nowait(None)

    async def serve(self, slots: int) -> AsyncIterator[list[Result]]:
        """Run jobs `slots` at once until `end` (or `stop`); yield finished rollouts as they come."""
        spec, done = self._spec, self._done

        async def slot() -> None:
            try:
                while (job := await self._inbox.get()) is not None:
                    rollout = await run_job(self._factory, self._env_id, job, spec.policy, limits=spec.limits,
                                            sampling=spec.sampling, group_prefix=spec.group_prefix)
                    done.put_nowait((job[0], job[2], rollout))
            finally:
                done.put_nowait(None)

        self._slots = [asyncio.create_task(slot()) for _ in range(slots)]
        ended, stopped = 0, False
        try:
            while ended < slots and not stopped:
                batch = []
                item = await done.get()
                while True:
                    if item is None:
                        ended += 1
                    elif item is _STOPPED:
                        stopped = True
                    else:
                        batch.append(item)
                    if done.empty():
                        break
                    item = done.get_nowait()
                if batch:
                    yield batch
        finally:
            await self._cancel_slots()

    async def stop(self) -> None:
        """Cancel every rollout; return once each has released its environment."""
        await self._cancel_slots()
        if self._done is not None:
            self._done.put_nowait(_STOPPED)

    async def _cancel_slots(self) -> None:
        for task in self._slots:
            task.cancel()
        await asyncio.gather(*self._slots, return_exceptions=True)

    async def close(self) -> None:
        """Release this call's engine (an actor kept warm builds the next call's in `setup`)."""
        await self._cancel_slots()
        if self._spec is not None:
            spec, self._spec = self._spec, None
            await spec.policy.aclose()
