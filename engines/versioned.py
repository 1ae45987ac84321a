"""`VersionedEngine`: any engine, with the weights version stamped on every generation, for asynchronous RL.

Around each request it reads the shared `WeightsVersion`: a request waits while a weight sync is under way (none is
sampled by half-loaded weights), and its `Generation` says which version sampled its first token; a request that
lived through a sync that failed raises `WeightSyncError` (its rollout is an infrastructure failure, not data). A sync that aborts
the requests in flight (vLLM's `/pause?mode=abort`, which answers them with `finish_reason: abort` and the tokens
sampled so far) does not cut the completion: once the new weights are live the engine asks for the rest, with the
prompt and the tokens already sampled as the new prompt (token-exact: the new weights continue from exactly those
ids), and records where the new version took over (`Generation.version_changes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams, VersionChange
from rollgym.engines.busy import BusyClock
from rollgym.engines.errors import WeightSyncError
from rollgym.engines.weights import WeightsState, WeightsVersion


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
        queued_s, generate_s = gen.timings.queued_s, gen.timings.generate_s
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
                "timings": GenerationTimings(queued_s=queued_s, generate_s=generate_s),
                "policy_version": version,
                "version_changes": changes,
            }
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
