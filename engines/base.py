"""The one token-in/token-out interface every inference engine implements.

The rollout loop only sees `Engine.generate(prompt_ids, sampling) -> Generation`, so it never
cares which engine sampled (the coupling TRL had to undo: huggingface/trl #5119, #5122, #5232).
`Generation.logprobs[i]` is the log-probability of `completion_ids[i]` under the distribution
actually sampled from, after temperature/top-k/top-p (vLLM's `processed_logprobs`), which is what
truncated importance sampling compares with the trainer's recomputation (huggingface/trl #3867).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from rollgym.limits import DEFAULT_MAX_TOKENS_PER_TURN
from rollgym.models import BoundaryModel

FinishReason = Literal["stop", "length", "abort"]


class SamplingParams(BoundaryModel):
    """How to sample one completion; the same fields and meanings as vLLM's SamplingParams.

    `max_tokens` is for calling an engine directly: in a rollout the per-turn budget is
    `Limits.max_tokens_per_turn` (the loop sets it each turn, and refuses a `max_tokens` given here).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(default=1.0, ge=0.0, description="0 means greedy decoding")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="nucleus mass kept; 1 means off")
    top_k: int = Field(default=0, ge=0, description="keep the k most likely tokens; 0 means off")
    max_tokens: int = Field(
        default=DEFAULT_MAX_TOKENS_PER_TURN, ge=1, description="most tokens to generate, stop token included"
    )
    stop_token_ids: list[int] = Field(default_factory=list, description="extra ids that end the completion")
    seed: int | None = Field(default=None, ge=0, lt=2**63, description="makes sampling reproducible per request")


class GenerationTimings(BaseModel):
    """Where one request's wall-clock time went, in seconds, and how much of its prefill a prefix cache saved."""

    model_config = ConfigDict(extra="forbid")

    queued_s: float = Field(default=0.0, ge=0.0, description="waiting for a batch slot or a connection")
    generate_s: float = Field(default=0.0, ge=0.0, description="prefill + decode (or the HTTP round trip)")
    cached_tokens: int = Field(
        default=0,
        ge=0,
        description="prompt ids whose KV was reused, not recomputed: from earlier turns or an identical prompt in the "
        "same batch (0 where the engine cannot say)",
    )


class VersionChange(BaseModel):
    """Where new weights took over inside one completion: from token `at` on, `version` sampled (None: somewhere
    inside, the engine cannot say where)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: int | None = Field(ge=0, description="index in completion_ids of the first token the new weights sampled")
    version: int = Field(description="the weights version that sampled from there on")


class Generation(BaseModel):
    """One sampled completion, token-exact: ids and the processed logprob of each id."""

    model_config = ConfigDict(extra="forbid")

    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    stop_token_id: int | None = Field(
        default=None, description="the id that ended the completion, if any (also last in completion_ids)"
    )
    prompt_len: int
    timings: GenerationTimings = Field(default_factory=GenerationTimings)
    engine: str
    model: str
    token_exact: bool = True
    policy_version: int | None = Field(
        default=None, description="the weights version that sampled the first token (None: the engine has no versions)"
    )
    version_changes: list[VersionChange] = Field(
        default_factory=list, description="weights that took over during this completion (a sync mid-generation)"
    )


@runtime_checkable
class Engine(Protocol):
    """A token-in/token-out sampler: the only thing the rollout loop needs from inference."""

    name: str
    model: str
    token_exact: bool
    max_model_len: int | None

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        """Sample one completion of `prompt_ids`; raise an `EngineError` on any failure."""
        ...

    async def aclose(self) -> None:
        """Release connections, worker tasks and models."""
        ...
