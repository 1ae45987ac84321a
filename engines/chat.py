"""The text-in/text-out interface for hosted chat models, which cannot be token-exact.

A `ChatEngine` takes OpenAI-style messages and returns the assistant message; it never sees token
ids, so everything it produces carries `token_exact = False` and the rollout loop (and the TRL
adapter, which refuses such data for training) branch on that flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from rollgym.engines.base import GenerationTimings, SamplingParams

ChatFinishReason = Literal["stop", "length", "tool_calls", "content_filter", "function_call", "abort"]


class ChatUsage(BaseModel):
    """Token counts the provider reports (its own tokenizer, not ours)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatGeneration(BaseModel):
    """One assistant turn from a hosted model; never token-exact."""

    model_config = ConfigDict(extra="forbid")

    message: dict[str, Any] = Field(description="the assistant message, OpenAI format (role, content, tool_calls)")
    finish_reason: ChatFinishReason
    usage: ChatUsage | None = None
    timings: GenerationTimings = Field(default_factory=GenerationTimings)
    engine: str
    model: str
    token_exact: Literal[False] = False


@runtime_checkable
class ChatEngine(Protocol):
    """A chat-completions sampler: messages in, one assistant message out."""

    name: str
    model: str
    token_exact: bool

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        sampling: SamplingParams | None = None,
    ) -> ChatGeneration:
        """Sample one assistant message; raise an `EngineError` on any failure."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
