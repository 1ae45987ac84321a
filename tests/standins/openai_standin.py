"""A stand-in for OpenAI's `POST /v1/chat/completions`, for tests of hosted-model engines on loopback.

Response fields follow OpenAI's `ChatCompletion` as typed by the official client
(openai-python src/openai/types/chat/chat_completion.py: id, object="chat.completion", created,
model, choices[{index, message{role, content, refusal, tool_calls, annotations}, finish_reason,
logprobs}], usage{prompt_tokens, completion_tokens, total_tokens}, system_fingerprint) and errors
its `{"error": {"message", "type", "param", "code"}}` shape.

Its "model" echoes the last user message, word by word up to `max_completion_tokens` (then
`finish_reason` is `length`); a user message `call NAME {json}` with tools offered yields a tool call.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


@dataclass
class ChatStandinControl:
    """Switches for tests: failures, delays, and a log of the request bodies received."""

    fail_next: int = 0
    fail_status: int = 500
    fail_code: str | None = None
    fail_message: str = "stand-in: injected failure"
    delay_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)


def _error(status: int, message: str, code: str | None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}}, status_code=status)


def make_openai_standin(models: tuple[str, ...] = ("gpt-4o-mini",)) -> tuple[FastAPI, ChatStandinControl]:
    """Build the stand-in app and its control object."""
    app = FastAPI()
    control = ChatStandinControl()

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> JSONResponse:
        body = await request.json()
        control.requests.append(body)
        if control.delay_s:
            await asyncio.sleep(control.delay_s)
        if control.fail_next > 0:
            control.fail_next -= 1
            return _error(control.fail_status, control.fail_message, control.fail_code)
        if body.get("model") not in models:
            return _error(404, f"The model `{body.get('model')}` does not exist", "model_not_found")
        messages = body.get("messages") or []
        if not messages:
            return _error(400, "[] is too short - 'messages'", None)
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {"content": ""})
        text = str(last_user.get("content") or "")
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 10**9
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "annotations": []}
        if body.get("tools") and text.startswith("call "):
            _, name, args = text.split(" ", 2)
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            ]
            finish, words = "tool_calls", [name]
        else:
            words = text.split()
            finish = "length" if len(words) > limit else "stop"
            words = words[:limit]
            message["content"] = " ".join(words)
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        return JSONResponse(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": len(words),
                    "total_tokens": prompt_tokens + len(words),
                },
                "system_fingerprint": "fp_standin",
                "service_tier": "default",
            }
        )

    return app, control
