"""Chat models an environment calls itself (a simulated user): a `ChatModel` object, or a spec string that the rollout
layer, which knows the engines, turns into one through the factory it registers here (envs import no engine)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from rollgym.errors import UsageError


class ChatReply(BaseModel):
    """One message a chat model wrote: the OpenAI message, and, for a token-exact model, the ids it sampled."""

    message: dict[str, Any]
    token_ids: list[int] = Field(default_factory=list)
    model: str = ""


@runtime_checkable
class ChatModel(Protocol):
    """Messages (OpenAI format) and tool schemas in, one assistant message out."""

    name: str

    async def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> ChatReply:
        """The model's next message; an `EngineError` (or `OSError`) when the model cannot be reached."""
        ...


#: how a spec string becomes a `ChatModel`: a "module:name" entry point, loaded on first use (the rollout layer's, which
#: builds any engine spec: `smollm2-135m`, `openai:http://host/v1#model`, ...), or a function set by
#: `register_chat_model_factory`
_FACTORY: list[str | Callable[[str], ChatModel]] = ["rollgym.rollouts.chat_model:chat_model_of_spec"]


def register_chat_model_factory(factory: str | Callable[[str], ChatModel]) -> None:
    """Set how a spec string becomes a `ChatModel`: a function, or its "module:name" entry point."""
    _FACTORY[:] = [factory]


def chat_model(model: ChatModel | str) -> ChatModel:
    """`model` itself, or the `ChatModel` its spec names."""
    if not isinstance(model, str):
        if not isinstance(model, ChatModel):
            raise UsageError(f"a chat model is a spec string or has `name` and `async reply(...)`, got {model!r}")
        return model
    factory = _FACTORY[0]
    if isinstance(factory, str):
        module, _, name = factory.partition(":")
        factory = _FACTORY[0] = getattr(importlib.import_module(module), name)
    return factory(model)
