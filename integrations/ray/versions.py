"""Weights versions on Ray actors: turns sampled on an actor record the version that sampled them, as in one process.

The driver's `WeightsVersion` (moved by the trainer's weight sync) is published to a small named actor, the
`VersionBoard`; each actor process follows it with a `Mirror` (a `WeightsVersion` polled from the board) and samples
through a `VersionedEngine` over its own engine. A request the server aborted for a sync waits until the mirror has
seen that sync, then goes on with the new weights, token-exact, as in one process.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any, cast

from rollgym.engines.weights import VersionedEngine, WeightsSnapshot, WeightsState, WeightsVersion

#: How often an actor's mirror reads the board (a sync takes ~0.5 s on a CPU: a new request waits at most this long
#: to see that one has begun).
POLL_S = 0.05
#: How long a request aborted by the server waits for the mirror to see the sync that aborted it.
CATCH_UP_S = 5.0


class VersionBoard:
    """The driver's latest `WeightsSnapshot`, for the actors to read (a Ray actor of no CPU)."""

    def __init__(self) -> None:
        self._snap: WeightsSnapshot | None = None

    def put(self, snap: WeightsSnapshot) -> None:
        self._snap = snap

    def get(self) -> WeightsSnapshot | None:
        return self._snap


class BoardVersions:
    """Picklable (the board by name): on an actor, wraps the engine it builds in a `VersionedEngine` that follows the
    board (`Policy.wrapped`)."""

    def __init__(self, name: str, namespace: str | None) -> None:
        self.name, self.namespace = name, namespace

    def __call__(self, engine: Any) -> VersionedEngine:
        return VersionedEngine(engine, mirror(self.name, self.namespace))


def publish(weights: WeightsVersion, ray: Any) -> tuple[BoardVersions, Any]:
    """Start a board that follows `weights` (every pause, resume, failure and set); returns the actors' wrapper and
    the board's handle (kill it when the run ends)."""
    name = f"rollgym-versions-{uuid.uuid4().hex[:12]}"
    board = ray.remote(num_cpus=0)(VersionBoard).options(name=name).remote()
    weights.subscribe(lambda snap: board.put.remote(snap))  # one caller: Ray runs its calls in order
    namespace = ray.get_runtime_context().namespace
    return BoardVersions(name, namespace), board


class Mirror(WeightsVersion):
    """A `WeightsVersion` that follows a board from another process: a thread reads it every `POLL_S`."""

    def __init__(self, board: Any) -> None:
        super().__init__()
        self._board = board
        self._refresh()
        threading.Thread(target=self._follow, name="rollgym-versions", daemon=True).start()

    def _refresh(self) -> None:
        import ray

        snap = cast("WeightsSnapshot | None", ray.get(self._board.get.remote()))  # what VersionBoard.get returns
        if snap is not None:
            self.apply(snap)

    def _follow(self) -> None:
        while True:
            time.sleep(POLL_S)
            try:
                self._refresh()
            except Exception:  # noqa: BLE001 - the board is gone (the run ended): the last state stays
                return

    async def catch_up(self, seen: WeightsState) -> None:
        deadline = time.monotonic() + CATCH_UP_S
        while self.state().syncs == seen.syncs and time.monotonic() < deadline:
            await asyncio.to_thread(self._refresh)
            if self.state().syncs == seen.syncs:
                await asyncio.sleep(POLL_S)


_MIRRORS: dict[str, Mirror] = {}
_LOCK = threading.Lock()


def mirror(name: str, namespace: str | None) -> Mirror:
    """This process's mirror of the board `name` (one thread per board, however many engines follow it)."""
    with _LOCK:
        if name not in _MIRRORS:
            import ray

            _MIRRORS[name] = Mirror(ray.get_actor(name, namespace=namespace))
        return _MIRRORS[name]
