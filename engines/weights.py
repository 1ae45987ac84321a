"""Weights versions, engine side, in one place: `WeightsVersion` (which weights an engine samples with right now, and
whether a weight sync is under way) and `VersionedEngine` (an engine that stamps each generation with it).

A trainer that updates the engine's weights while rollouts run (asynchronous RL) numbers each update; the rollouts
must know which number sampled each token. One `WeightsVersion` is shared by the weight sync (`pause()` before it
swaps the weights in, `resume(version)` after) and by the engines that sample (`VersionedEngine` reads it around
every request). Thread-safe: a trainer pauses and resumes from its own thread while rollouts run on an event loop
in another.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams, VersionChange
from rollgym.engines.busy import BusyClock
from rollgym.engines.errors import WeightSyncError

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


# --- the engine that samples under a WeightsVersion ------------------------------------------------------------
# `VersionedEngine`: any engine, with the weights version stamped on every generation, for asynchronous RL.
#
# Around each request it reads the shared `WeightsVersion`: a request waits while a weight sync is under way (none is
# sampled by half-loaded weights), and its `Generation` says which version sampled its first token; a request that
# lived through a sync that failed raises `WeightSyncError` (its rollout is an infrastructure failure, not data). A sync that aborts
# the requests in flight (vLLM's `/pause?mode=abort`, which answers them with `finish_reason: abort` and the tokens
# sampled so far) does not cut the completion: once the new weights are live the engine asks for the rest, with the
# prompt and the tokens already sampled as the new prompt (token-exact: the new weights continue from exactly those
# ids), and records where the new version took over (`Generation.version_changes`).


def _prefix_cache_clearer(engine: Any) -> Callable[[WeightsSnapshot], None]:
    """A `WeightsVersion` listener that clears `engine`'s prefix KV store on every pause, resume or version set
    (holding the engine weakly: the version may outlive it)."""
    ref = weakref.ref(engine)

    def clear(_snap: WeightsSnapshot) -> None:
        live = ref()
        if live is not None:
            live.clear_prefix_cache()

    return clear


class VersionedEngine:
    """Wraps `engine`; `weights` is the version the trainer's sync moves. `sync_aborts`: the sync aborts requests in
    flight (then a completion that was not aborted was sampled whole by the weights it started with); otherwise a
    sync during a request is recorded as a change at an unknown token (`VersionChange.at` None)."""

    token_exact = True

    def __init__(self, engine: Any, weights: WeightsVersion, *, sync_aborts: bool = True) -> None:
        self.inner, self.weights, self.sync_aborts = engine, weights, sync_aborts
        self.name = str(getattr(engine, "name", type(engine).__name__))
        self.token_exact = bool(getattr(engine, "token_exact", True))
        self.busy = BusyClock()
        if callable(getattr(engine, "clear_prefix_cache", None)):  # KV from old weights must not outlive a sync
            weights.subscribe(_prefix_cache_clearer(engine))

    @property
    def model(self) -> str:
        return str(getattr(self.inner, "model", ""))

    @property
    def max_model_len(self) -> int | None:
        return getattr(self.inner, "max_model_len", None)  # a server engine learns it on first use

    async def _sample(self, prompt: list[int], sampling: SamplingParams) -> Generation:
        with self.busy:
            return await self.inner.generate(prompt, sampling)

    async def _synced_since(self, seen: WeightsState) -> bool:
        """Whether a sync began after `seen` (asked when a request came back aborted); a copy of the version in
        another process (a Ray actor's) may hear of the sync after the server's abort, so it catches up first."""
        if self.weights.state().syncs == seen.syncs:
            await self.weights.catch_up(seen)
        return self.weights.state().syncs != seen.syncs

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        """Sample as the wrapped engine does; the result carries `policy_version` and any `version_changes`."""
        sampling = sampling or SamplingParams()
        prompt = list(prompt_ids)
        await self.weights.wait_open()
        start = seen = self.weights.state()
        version = seen.version
        gen = await self._sample(prompt, sampling)
        ids, logprobs, changes = list(gen.completion_ids), list(gen.logprobs), []
        queued_s, generate_s, cached = gen.timings.queued_s, gen.timings.generate_s, gen.timings.cached_tokens
        while gen.finish_reason == "abort" and len(ids) < sampling.max_tokens and await self._synced_since(seen):
            await self.weights.wait_open()  # the sync that aborted it is done: the rest comes from the new weights
            seen = self.weights.state()
            if ids:
                changes.append(VersionChange(at=len(ids), version=seen.version))
            else:  # nothing sampled yet: the whole completion is the new weights'
                version = seen.version
            rest = sampling.model_copy(update={"max_tokens": sampling.max_tokens - len(ids)})
            gen = await self._sample(prompt + ids, rest)
            ids += gen.completion_ids
            logprobs += gen.logprobs
            queued_s, generate_s = queued_s + gen.timings.queued_s, generate_s + gen.timings.generate_s
            cached += gen.timings.cached_tokens
        if self.weights.state().failed != start.failed:
            raise WeightSyncError(
                f"{self.name}: a weight sync failed while this request was in flight "
                f"({self.weights.last_failure or 'no reason given'}); what sampled it cannot be told"
            )
        last = changes[-1].version if changes else version
        if not self.sync_aborts and self.weights.state().syncs != seen.syncs and self.weights.current != last:
            changes.append(VersionChange(at=None, version=self.weights.current))
        return gen.model_copy(
            update={
                "completion_ids": ids,
                "logprobs": logprobs,
                "prompt_len": len(prompt),
                "timings": GenerationTimings(queued_s=queued_s, generate_s=generate_s, cached_tokens=cached),
                "policy_version": version,
                "version_changes": changes,
            }
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
