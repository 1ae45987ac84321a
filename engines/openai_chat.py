"""OpenAIChatEngine: hosted chat models through the official `openai` client (AsyncOpenAI).

Useful for evaluation and data generation with API models. Text in, text out: it cannot be
token-exact, so `token_exact` is False on the engine and on every `ChatGeneration`.
Request fields: `model`, `messages`, `tools`, `temperature`, `top_p`, `max_completion_tokens`,
`seed`, `n=1` (openai-python `chat.completions.create`); response: `choices[0].message`,
`choices[0].finish_reason`, `usage` (openai-python types/chat/chat_completion.py `ChatCompletion`).
The chat API has no `top_k` and no stop token ids, so asking for them is an error, not a silent drop.
Works with any OpenAI-compatible server through `base_url`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import GenerationTimings, SamplingParams
from rollgym.engines.chat import ChatGeneration, ChatUsage
from rollgym.engines.errors import (
    BadRequestError,
    ContextOverflowError,
    EngineError,
    EngineTimeoutError,
    InvalidOutputError,
    ServerError,
    UnreachableError,
)
from rollgym.engines.http_client import DEFAULT_MAX_RETRIES


class OpenAIChatEngine:
    """ChatEngine over the OpenAI chat completions API (or any compatible server)."""

    name = "openai-chat"
    token_exact = False

    def __init__(
        self,
        model: str | None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        """`api_key` defaults to $OPENAI_API_KEY, `base_url` to $OPENAI_BASE_URL or OpenAI's API."""
        from openai import AsyncOpenAI

        if not model:
            raise BadRequestError("openai-chat: a model name is required, e.g. openai:gpt-4o-mini")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise BadRequestError(
                "openai-chat: no API key; set OPENAI_API_KEY (or pass api_key=...) to use hosted OpenAI models"
            )
        self.model = model
        self.max_model_len: int | None = None
        self._client = AsyncOpenAI(
            api_key=key,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            timeout=timeout_s,
            max_retries=max_retries,
        )
        self._slots = asyncio.Semaphore(max_concurrency)

    def request_kwargs(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, sampling: SamplingParams
    ) -> dict[str, Any]:
        """Keyword arguments for `chat.completions.create`; rejects what the chat API cannot do."""
        if not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
            raise BadRequestError(f"{self.name}: messages must be a non-empty list of dicts with a 'role'")
        if sampling.top_k:
            raise BadRequestError(f"{self.name}: the OpenAI chat API has no top_k; leave top_k at 0")
        if sampling.stop_token_ids:
            raise BadRequestError(f"{self.name}: the OpenAI chat API takes no stop token ids (it is not token-level)")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_completion_tokens": sampling.max_tokens,
            "n": 1,
        }
        if tools:
            kwargs["tools"] = list(tools)
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        return kwargs

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        sampling: SamplingParams | None = None,
    ) -> ChatGeneration:
        """Sample one assistant message."""
        import openai

        sampling = sampling or SamplingParams()
        kwargs = self.request_kwargs(messages, tools, sampling)
        enqueued = time.perf_counter()
        async with self._slots:
            started = time.perf_counter()
            try:
                response = await self._client.chat.completions.create(**kwargs)
            except openai.APITimeoutError:
                raise EngineTimeoutError(f"{self.name}: no answer within the timeout") from None
            except openai.APIConnectionError as exc:
                raise UnreachableError(f"{self.name}: could not reach {self._client.base_url} ({exc})") from None
            except openai.APIStatusError as exc:
                raise self._status_error(exc) from None
            except openai.OpenAIError as exc:
                raise EngineError(f"{self.name}: {exc}") from None
        done = time.perf_counter()
        if not response.choices:
            raise InvalidOutputError(f"{self.name}: the response has no choices")
        choice = response.choices[0]
        if choice.message is None or choice.finish_reason is None:
            raise InvalidOutputError(f"{self.name}: the response has no message or no finish_reason")
        usage = ChatUsage.model_validate(response.usage.model_dump()) if response.usage else None
        return ChatGeneration(
            message=choice.message.model_dump(exclude_none=True),
            finish_reason=choice.finish_reason,
            usage=usage,
            timings=GenerationTimings(queued_s=started - enqueued, generate_s=done - started),
            engine=self.name,
            model=response.model or self.model,
        )

    def _status_error(self, exc: Any) -> EngineError:
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        message = str(body.get("message") or exc.message)
        code = str(body.get("code") or "")
        if status >= 500 or status == 429:
            return ServerError(f"{self.name}: the server failed (HTTP {status}) after retries: {message}")
        if code == "context_length_exceeded" or "maximum context length" in message:
            return ContextOverflowError(f"{self.name}: the conversation does not fit the model's context: {message}")
        return BadRequestError(f"{self.name}: the server rejected the request (HTTP {status}): {message}")

    async def aclose(self) -> None:
        """Close the client's connection pool."""
        await self._client.close()
