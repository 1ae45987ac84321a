"""Gymnasium spaces for chat messages: `contains` checks OpenAI message structure, `sample` yields valid ones."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gymnasium import spaces

ROLES = ("system", "user", "assistant", "tool")
_WORDS = ("fix", "the", "test", "bug", "run", "file", "error", "value", "ok", "done", "check")


def message_problem(msg: Any, roles: Sequence[str] = ROLES) -> str | None:
    """Why `msg` is not a valid chat message (None when it is)."""
    if not isinstance(msg, dict):
        return f"a message must be a dict, got {type(msg).__name__}"
    role = msg.get("role")
    if role not in roles:
        return f"role must be one of {list(roles)}, got {role!r}"
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"content must be a string, a list of parts, or None; got {type(content).__name__}"
    if isinstance(content, list) and not all(isinstance(p, dict) and "type" in p for p in content):
        return "content parts must be dicts with a 'type'"
    if role == "tool" and not isinstance(msg.get("tool_call_id"), str):
        return "a tool message needs a string 'tool_call_id'"
    calls = msg.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            return "only assistant messages carry tool_calls"
        if not isinstance(calls, list):
            return "tool_calls must be a list"
        for i, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                return f"tool_calls[{i}] needs function.name (a string)"
            if not isinstance(fn.get("arguments", ""), (str, dict)):
                return f"tool_calls[{i}].function.arguments must be a JSON string"
    if role == "assistant" and content is None and not calls:
        return "an assistant message needs content or tool_calls"
    return None


class ChatMessageSpace(spaces.Space[dict]):
    """One chat message with a role among `roles` (an action space is `ChatMessageSpace(("assistant",))`)."""

    def __init__(self, roles: Sequence[str] = ROLES, tool_names: Sequence[str] = (), seed: int | None = None) -> None:
        self.roles = tuple(roles)
        self.tool_names = tuple(tool_names)
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return message_problem(x, self.roles) is None

    def _text(self) -> str:
        n = int(self.np_random.integers(1, 8))
        return " ".join(self.np_random.choice(_WORDS, size=n).tolist())

    def sample(self, mask: Any = None, probability: Any = None) -> dict:
        role = str(self.np_random.choice(self.roles))
        msg: dict[str, Any] = {"role": role, "content": self._text()}
        if role == "tool":
            msg["tool_call_id"] = f"call_{int(self.np_random.integers(1 << 30))}"
        if role == "assistant" and self.tool_names and self.np_random.random() < 0.5:
            msg["tool_calls"] = [
                {
                    "id": f"call_{int(self.np_random.integers(1 << 30))}",
                    "type": "function",
                    "function": {
                        "name": str(self.np_random.choice(self.tool_names)),
                        "arguments": json.dumps({"x": self._text()}),
                    },
                }
            ]
        return msg

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ChatMessageSpace) and other.roles == self.roles and other.tool_names == self.tool_names

    def __repr__(self) -> str:
        return f"ChatMessageSpace(roles={self.roles})"


class ChatMessagesSpace(spaces.Space[list]):
    """A list of chat messages (what `reset` and `step` return as observations)."""

    def __init__(self, roles: Sequence[str] = ROLES, max_length: int = 8, seed: int | None = None) -> None:
        self.message_space = ChatMessageSpace(roles)
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def seed(self, seed: int | None = None) -> list[int]:
        return [super().seed(seed), self.message_space.seed(None if seed is None else seed + 1)]

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(self.message_space.contains(m) for m in x)

    def sample(self, mask: Any = None, probability: Any = None) -> list:
        n = int(self.np_random.integers(1, self.max_length + 1))
        return [self.message_space.sample() for _ in range(n)]

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ChatMessagesSpace) and other.message_space == self.message_space

    def __repr__(self) -> str:
        return f"ChatMessagesSpace(roles={self.message_space.roles})"


def action_space(tool_names: Sequence[str] = ()) -> ChatMessageSpace:
    """The action space of a chat environment: one assistant message."""
    return ChatMessageSpace(("assistant",), tool_names)


def observation_space() -> ChatMessagesSpace:
    """The observation space of a chat environment: the new messages of a turn."""
    return ChatMessagesSpace(("system", "user", "tool"))


__all__ = ["ChatMessageSpace", "ChatMessagesSpace", "action_space", "message_problem", "observation_space"]
