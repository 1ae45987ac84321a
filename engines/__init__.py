"""Inference engines behind one token-in/token-out interface (`Engine.generate`).

Users pick one with a spec string through `rollgym.Policy("smollm2-135m")` (engine + certified tokenizer);
`make_engine(spec)` builds the engine alone. Heavy engines (torch, vLLM, openai) are imported only when built.
"""

from rollgym.engines.base import Engine, FinishReason, Generation, GenerationTimings, SamplingParams
from rollgym.engines.chat import ChatEngine, ChatGeneration, ChatUsage
from rollgym.engines.errors import (
    BadRequestError,
    ContextOverflowError,
    EngineError,
    EngineTimeoutError,
    EngineUnavailableError,
    InvalidOutputError,
    ModelUnavailableError,
    ServerError,
    UnknownEngineError,
    UnreachableError,
)
from rollgym.engines.specs import available_engines, make_engine, register_alias, register_engine

__all__ = [
    "BadRequestError",
    "ChatEngine",
    "ChatGeneration",
    "ChatUsage",
    "ContextOverflowError",
    "Engine",
    "EngineError",
    "EngineTimeoutError",
    "EngineUnavailableError",
    "FinishReason",
    "Generation",
    "InvalidOutputError",
    "ModelUnavailableError",
    "SamplingParams",
    "ServerError",
    "GenerationTimings",
    "UnknownEngineError",
    "UnreachableError",
    "available_engines",
    "make_engine",
    "register_alias",
    "register_engine",
]
