"""τ²'s user simulator with its model call replaced by a rollgym `ChatModel`: τ²'s own prompt (guidelines + the task's
scenario), role flipping and tool-call handling, and the model the caller chose; the sampled ids (a token-exact model's)
are kept on the user's message (`raw_data`), so the episode records what the user model said token for token."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from tau2.data_model.message import MultiToolMessage, ToolCall, UserMessage
from tau2.user.base import UserError
from tau2.user.user_simulator import UserSimulator
from tau2.utils.llm_utils import to_litellm_messages

from rollgym.envs.core.chat_models import ChatModel, ChatReply
from rollgym.envs.suites.tau2.errors import UserModelError
from rollgym.errors import EngineError


class ModelUser(UserSimulator):
    """The user simulator of one episode; its (sync) turns run in a worker thread and await the model on `loop`."""

    def __init__(self, model: ChatModel, loop: asyncio.AbstractEventLoop, **kwargs: Any) -> None:
        super().__init__(llm=model.name, llm_args={}, **kwargs)
        self.model = model
        self.loop = loop

    def ask_model(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        """The model's reply, awaited on the episode's loop; a model that cannot answer is a `UserModelError`."""
        future = asyncio.run_coroutine_threadsafe(self.model.reply(messages, tools), self.loop)
        try:
            return future.result()
        except (EngineError, OSError) as exc:
            raise UserModelError(f"the τ² user model {self.model.name!r} failed: {type(exc).__name__}: {exc}") from exc

    def _generate_next_message(self, message, state):
        """τ²'s `UserSimulator._generate_next_message` (tau2 26.3), asking `self.model` instead of litellm."""
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        messages = to_litellm_messages([*state.system_messages, *state.flip_roles()])
        tools = [tool.openai_schema for tool in self.tools] if self.tools else None
        reply = self.ask_model(messages, tools)
        calls = reply.message.get("tool_calls") or []
        user_message = UserMessage(
            role="user",
            content=reply.message.get("content"),
            raw_data={"model": reply.model, "token_ids": reply.token_ids},
        )
        if calls:
            user_message.tool_calls = [tool_call(call, index, "user") for index, call in enumerate(calls)]
        if not (user_message.has_text_content() or user_message.is_tool_call()):
            raise UserError(f"the user model {self.model.name!r} wrote an empty message")
        state.messages.append(user_message)
        return user_message, state


def tool_call(call: dict[str, Any], index: int, requestor: Literal["user", "assistant"]) -> ToolCall:
    """τ²'s `ToolCall` of an OpenAI tool call; arguments that are not a JSON object are passed as they are, under
    `arguments` (τ²'s tool then answers with its own error)."""
    import json

    function = call.get("function") or {}
    raw = function.get("arguments")
    try:
        arguments = raw if isinstance(raw, dict) else json.loads(raw or "{}")
    except (ValueError, TypeError, RecursionError):
        arguments = {"arguments": raw}
    if not isinstance(arguments, dict):
        arguments = {"arguments": arguments}
    return ToolCall(
        id=str(call.get("id") or f"call_{index}"),
        name=str(function.get("name") or ""),
        arguments=arguments,
        requestor=requestor,
    )
