"""`WeightsVersion`: which weights an engine samples with right now, and whether a weight sync is under way.

A trainer that updates the engine's weights while rollouts run (asynchronous RL) numbers each update; the rollouts
must know which number sampled each token. One `WeightsVersion` is shared by the weight sync (`pause()` before it
swaps the weights in, `resume(version)` after) and by the engines that sample (`VersionedEngine` reads it around
every request). Thread-safe: a trainer pauses and resumes from its own thread while rollouts run on an event loop
in another.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass

#: How often a request waiting for a sync to end looks again (a sync takes ~0.5 s on a CPU, seconds on a GPU).
POLL_S = 0.01


@dataclass(frozen=True, slots=True)
class WeightsState:
    """A consistent read: the version, and how many syncs have begun so far (a request that sees this count change
    between its start and its end lived through a sync)."""

    version: int
    syncs: int
    failed: int  # syncs that failed so far (a request that lived through one cannot say what sampled it)


@dataclass(frozen=True, slots=True)
class WeightsSnapshot:
    """All of a `WeightsVersion` at one moment, to copy it into another process (Ray actors: `Mirror`)."""

    version: int
    syncs: int
    failed: int
    paused: bool
    last_failure: str


class WeightsVersion:
    """The live weights' version: starts at `version`; each sync `pause()`s sampling, then `resume()`s it with the
    next version."""

    def __init__(self, version: int = 0) -> None:
        self._lock = threading.Lock()
        self._version = version
        self._syncs = 0
        self._failed = 0
        self.last_failure = ""
        self._open = threading.Event()
        self._open.set()
        self._listeners: list[Callable[[WeightsSnapshot], None]] = []

    @property
    def current(self) -> int:
        """The version of the weights sampling right now (during a sync: the one being replaced)."""
        return self._version

    @property
    def paused(self) -> bool:
        """True while a sync is under way (new requests wait for it to end)."""
        return not self._open.is_set()

    def state(self) -> WeightsState:
        with self._lock:
            return WeightsState(self._version, self._syncs, self._failed)

    def pause(self) -> None:
        """A sync begins: requests not sent yet wait until `resume`."""
        with self._lock:
            self._syncs += 1
            self._open.clear()
        self._notify()

    def resume(self, version: int | None = None) -> int:
        """The sync is done: the new weights are `version` (default: the next number); waiting requests go on."""
        with self._lock:
            self._version = self._version + 1 if version is None else version
            self._open.set()
            live = self._version
        self._notify()
        return live

    def fail(self, reason: str) -> None:
        """The sync failed: the weights it was replacing stay live (same version); waiting requests go on, and the
        requests it interrupted fail (`WeightSyncError`)."""
        with self._lock:
            self._failed += 1
            self.last_failure = reason
            self._open.set()
        self._notify()

    def set(self, version: int) -> None:
        """Say which version is live without a sync (a trainer resumed from a checkpoint numbers from there)."""
        with self._lock:
            self._version = version
        self._notify()

    def snapshot(self) -> WeightsSnapshot:
        with self._lock:
            return WeightsSnapshot(self._version, self._syncs, self._failed, not self._open.is_set(), self.last_failure)

    def subscribe(self, listener: Callable[[WeightsSnapshot], None]) -> None:
        """Call `listener` with a snapshot after every change (a copy in another process follows this one)."""
        self._listeners.append(listener)
        listener(self.snapshot())

    def apply(self, snap: WeightsSnapshot) -> None:
        """Take another `WeightsVersion`'s state (the copy's side of `subscribe`)."""
        with self._lock:
            self._version, self._syncs, self._failed, self.last_failure = (
                snap.version,
                snap.syncs,
                snap.failed,
                snap.last_failure,
            )
            if snap.paused:
                self._open.clear()
            else:
                self._open.set()

    async def catch_up(self, seen: WeightsState) -> None:
        """A request came back aborted while this copy still shows `seen`: a copy fetched from elsewhere waits until
        it has seen the sync that aborted it; the original knows at once."""

    def _notify(self) -> None:
        if self._listeners:
            snap = self.snapshot()
            for listener in self._listeners:
                listener(snap)

    async def wait_open(self) -> None:
        """Return once no sync is under way."""
        while not self._open.is_set():
            await asyncio.sleep(POLL_S)

    def __repr__(self) -> str:
        return f"WeightsVersion({self._version}{', paused' if self.paused else ''})"
