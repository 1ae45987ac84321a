"""One count of live sandboxes per Docker host for every actor of a run, so least-loaded placement and
`max_per_host` hold across the cluster, not per process (`envs/sandbox/hosts.py` asks it, through `share`).

The `HostLedger` actor is created by the first actor that places a sandbox over several hosts (or under a
cap), named after the call, so a run without such sandboxes never starts it. The driver drops a dead actor's
slots (`drop`) and ends the ledger with the call (`end_ledger`).
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from typing import Any

#: How long a `take` waits in the ledger for a slot to free before saying "none" (the caller asks again).
WAIT_S = 0.5
#: Calls the ledger serves at once: waiting takes must leave room for the gives that free their slots.
MAX_CONCURRENCY = 10_000
#: A ledger nobody has called for this long with no slot counted ends itself (its driver died before ending
#: it); one with slots counted (its actors died with the driver, never giving them back), after 6 times that.
IDLE_S = 600.0


class HostLedger:
    """Live sandboxes per host (by `ledger_key`), and per owner (an actor), for the run's placements."""

    def __init__(self) -> None:
        self.live: Counter[str] = Counter()
        self.owned: dict[str, Counter[str]] = defaultdict(Counter)
        self.freed = asyncio.Condition()
        self.called, self.watch = 0.0, None

    async def _idle_exit(self) -> None:
        import ray

        loop = asyncio.get_running_loop()
        while (idle := loop.time() - self.called) < IDLE_S or (
            any(v > 0 for v in self.live.values()) and idle < 6 * IDLE_S
        ):
            await asyncio.sleep(min(60.0, IDLE_S))
        ray.kill(ray.get_runtime_context().current_actor)

    async def take(self, owner: str, candidates: list[str], cap: int | None, wait_s: float = WAIT_S) -> str | None:
        """The least-loaded candidate under `cap` (first of equals), counted for `owner`; None after `wait_s`
        with every candidate at the cap."""
        loop = asyncio.get_running_loop()
        self.called = loop.time()
        if self.watch is None:
            self.watch = asyncio.create_task(self._idle_exit())
        deadline = loop.time() + wait_s
        async with self.freed:
            while True:
                free = [k for k in candidates if cap is None or self.live[k] < cap]
                if free:
                    key = min(free, key=lambda k: self.live[k])
                    self.live[key] += 1
                    self.owned[owner][key] += 1
                    return key
                left = deadline - loop.time()
                if left <= 0:
                    return None
                try:
                    await asyncio.wait_for(self.freed.wait(), left)
                except TimeoutError:
                    return None

    async def give(self, owner: str, key: str) -> None:
        self.called = asyncio.get_running_loop().time()
        async with self.freed:
            if self.owned[owner][key] > 0:
                self.owned[owner][key] -= 1
                self.live[key] -= 1
                self.freed.notify_all()

    async def drop(self, owner: str) -> None:
        """An owner died: its slots are free (its containers may outlive it, until their TTL or a prune)."""
        self.called = asyncio.get_running_loop().time()
        async with self.freed:
            for key, count in self.owned.pop(owner, Counter()).items():
                self.live[key] -= count
            self.freed.notify_all()

    def load(self) -> dict[str, int]:
        return {k: v for k, v in self.live.items() if v}


#: The ledgers' Ray namespace (a detached actor in a job's anonymous namespace makes Ray print a warning).
NAMESPACE = "rollgym"


def ledger_name(call: str) -> str:
    return f"rollgym-hosts-{call}"


class RayLedger:
    """`hosts.Ledger` inside a rollout actor: the call's `HostLedger`, created on first use, for this owner."""

    def __init__(self, call: str, owner: str) -> None:
        self.name, self.owner, self._handle = ledger_name(call), owner, None

    def _ledger(self) -> Any:
        if self._handle is None:
            import ray

            # Detached: it outlives the actor that happened to create it; the driver ends it with the call.
            self._handle = (
                ray.remote(HostLedger)
                .options(
                    name=self.name,
                    namespace=NAMESPACE,
                    get_if_exists=True,
                    lifetime="detached",
                    num_cpus=0,
                    max_concurrency=MAX_CONCURRENCY,
                )
                .remote()
            )
        return self._handle

    def take(self, candidates: list[str], cap: int | None) -> str | None:
        import ray

        return ray.get(self._ledger().take.remote(self.owner, candidates, cap))

    async def atake(self, candidates: list[str], cap: int | None) -> str | None:
        """`take` awaited; a caller cancelled meanwhile (a rollout's time limit) gives back what it was counted."""
        taken = asyncio.wrap_future(self._ledger().take.remote(self.owner, candidates, cap).future())
        try:
            return await asyncio.shield(taken)
        except asyncio.CancelledError:
            taken.add_done_callback(self._give_back)
            raise

    def _give_back(self, taken: asyncio.Future) -> None:
        if not taken.cancelled() and taken.exception() is None and taken.result() is not None:
            self.give(taken.result())

    def give(self, key: str) -> None:
        self._ledger().give.remote(self.owner, key)


def drop_owner(call: str, owner: str) -> None:
    """Free a dead actor's slots, if the call has a ledger."""
    handle = _existing(call)
    if handle is not None:
        try:
            handle.drop.remote(owner)
        except Exception:  # noqa: BLE001 - the ledger is gone too: nothing to free
            pass


def end_ledger(call: str) -> None:
    """End the call's ledger, if one was created."""
    import ray

    handle = _existing(call)
    if handle is not None:
        ray.kill(handle)


def _existing(call: str) -> Any:
    import ray

    try:
        return ray.get_actor(ledger_name(call), namespace=NAMESPACE)
    except Exception:  # noqa: BLE001 - none was made (ValueError), or the cluster is gone: nothing to do
        return None
