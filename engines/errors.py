"""Errors every engine raises, so callers can handle a failure the same way whichever engine sampled.

`EngineError` (from `rollgym.errors`, under `RollgymError`) is the root; each subclass names who is at fault (the request, the server,
the network, or the engine's own output) so a rollout loop can decide to retry, skip or stop.
"""

from __future__ import annotations

from rollgym.errors import EngineError


class BadRequestError(EngineError, ValueError):
    """The request itself is wrong (empty prompt, bad sampling values, a 4xx from a server)."""


class ContextOverflowError(BadRequestError):
    """The prompt (plus at least one generated token) does not fit the model's context window."""


class ServerError(EngineError):
    """The server answered with a 5xx (after retries) or an error finish reason."""


class EngineTimeoutError(EngineError, TimeoutError):
    """The engine did not answer within its timeout."""


class UnreachableError(EngineError, ConnectionError):
    """The server could not be reached at all (after retries)."""


class InvalidOutputError(EngineError):
    """The engine's output broke the contract (length mismatch, NaN logprob, wrong prompt echo)."""


class WeightSyncError(EngineError):
    """A weight sync failed while this request was in flight: which weights sampled it cannot be told."""


class EngineUnavailableError(EngineError, ImportError):
    """The engine needs something this installation or machine lacks (e.g. vLLM, a GPU)."""


class ModelUnavailableError(EngineError):
    """A model could not be found, fetched or converted; the message says what to do."""


class UnknownEngineError(EngineError, ValueError):
    """An engine spec names no registered engine; the message lists what exists."""


def is_context_overflow(message: str) -> bool:
    """A 400 that means the prompt leaves no room to generate. vLLM 0.32 says "maximum context length" for a
    prompt over the limit, and, having clamped max_tokens to the room left, "must be at least 1, got 0" for a
    prompt exactly at it (rollgym never sends max_tokens 0 itself)."""
    return "maximum context length" in message or "max_tokens must be at least 1, got 0" in message
