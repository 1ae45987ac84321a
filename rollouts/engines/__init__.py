"""Inference engines behind one token-in/token-out interface (`Engine.generate`).

Pick one with a spec string: `make_engine("smollm2-135m")`, `make_engine("hf:/path")`,
`make_engine("vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B")`, `make_engine("openai:gpt-4o-mini")`.
Heavy engines (torch, vLLM, openai) are imported only when built.
"""

from .base import Engine, FinishReason, Generation, SamplingParams, GenerationTimings
from .chat import ChatEngine, ChatGeneration, ChatUsage
from .errors import (
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
from .registry import available_engines, make_engine, register_alias, register_engine

__all__ = [
    "BadRequestError", "ChatEngine", "ChatGeneration", "ChatUsage", "ContextOverflowError", "Engine", "EngineError",
    "EngineTimeoutError", "EngineUnavailableError", "FinishReason", "Generation", "InvalidOutputError",
    "ModelUnavailableError", "SamplingParams", "ServerError", "GenerationTimings", "UnknownEngineError", "UnreachableError",
    "available_engines", "make_engine", "register_alias", "register_engine",
]
