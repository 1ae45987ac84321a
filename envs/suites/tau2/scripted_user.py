"""A scripted user for tests and smoke runs: a `ChatModel` that says its lines in order (a line may be a whole
message, e.g. a user tool call), then τ²'s stop token."""

from __future__ import annotations

from typing import Any

from rollgym.envs.core.chat_models import ChatReply

#: τ²'s user stop token (`tau2.user.base.STOP`)
STOP = "###STOP###"


class ScriptedUser:
    """Replies with `lines[0]`, `lines[1]`, ... (text, or an OpenAI message dict), then `###STOP###` for good. Which
    line comes next is read off the conversation (the user's own earlier messages), so one object serves every episode."""

    name = "scripted-user"

    def __init__(self, lines: list[str | dict[str, Any]]) -> None:
        self.lines = list(lines)

    async def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> ChatReply:
        said = sum(m.get("role") == "assistant" for m in messages)  # τ² flips roles: the user's own are "assistant"
        line = self.lines[said] if said < len(self.lines) else STOP
        message = {"role": "assistant", "content": line} if isinstance(line, str) else {"role": "assistant", **line}
        return ChatReply(message=message, model=self.name)
