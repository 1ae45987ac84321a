"""A pooled JSON-over-HTTP client with a concurrency limit, timeouts and retries with backoff.

Built on aiohttp: at 64 concurrent requests httpx's pool cost ~5-9 ms CPU per request here against
aiohttp's ~0.5-0.8 ms (benchmarks/bench_engines.py; encode/httpx#3215). Connection errors, 429 and
5xx are retried with jittered exponential backoff (generation has no side effects, so a repeat is
safe); other 4xx raise at once with the server's own message; a read timeout is not retried.
Errors are rollgym's `EngineError` subclasses, prefixed with the owner's name.
Bodies are encoded and decoded with orjson: a token-in/token-out request carries the whole prompt as ids and vLLM
echoes them back, and the standard library's json spent ~0.3 ms of CPU per turn on those lists
(benchmarks/bench_peers.py); an answer orjson refuses (a bare NaN, which vLLM can write) is read by json instead.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import aiohttp
import orjson

from rollgym.engines.errors import (
    BadRequestError,
    ContextOverflowError,
    EngineError,
    EngineTimeoutError,
    InvalidOutputError,
    ServerError,
    UnreachableError,
    is_context_overflow,
)

# The request may not have reached the server, or the connection broke while answering.
_RETRY_EXCEPTIONS = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)

#: Retry budget for transient failures (refused connections, 5xx, 429): 5 retries with jittered backoff
#: doubling from 1 s to at most 30 s ride out a server restart of about 15-30 s before a rollout fails.
#: Configurable per engine (`-E max_retries=... -E backoff_s=... -E max_backoff_s=...`).
DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 30.0


_JSON_HEADERS = {"Content-Type": "application/json"}


def encode_body(body: dict[str, Any] | None) -> bytes | None:
    """The request body as JSON bytes (None for a request without one)."""
    return None if body is None else orjson.dumps(body)


def decode_body(raw: bytes) -> Any:
    """A JSON answer; `ValueError` when it is not JSON. A bare NaN/Infinity (not JSON, but written by Python
    servers) is read as a float, as the standard library does, so output validation can name it."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def error_message(text: str) -> str:
    """The `error.message` of an OpenAI/vLLM `ErrorResponse`, else FastAPI's `detail`, else the body's start."""
    try:
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return str(data["error"].get("message", data["error"]))
        if isinstance(data, dict) and "detail" in data:
            return str(data["detail"])
    except ValueError:
        pass
    return text[:500]


class RetryingJsonClient:
    """Sends JSON requests to one base URL; one connection pool and slot limit per event loop."""

    def __init__(
        self,
        base_url: str,
        *,
        owner: str,
        max_concurrency: int = 64,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        headers: dict[str, str] | None = None,
        unreachable_hint: str = "is the server running?",
    ) -> None:
        if max_concurrency < 1 or max_retries < 0:
            raise BadRequestError(f"{owner}: max_concurrency must be >= 1 and max_retries >= 0")
        self.base_url = base_url.rstrip("/")
        self.owner = owner
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._headers = headers or {}
        self._hint = unreachable_hint
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None

    def slot(self) -> asyncio.Semaphore:
        """The semaphore bounding requests in flight (use `async with client.slot():`)."""
        self._session_for_loop()
        assert self._slots is not None
        return self._slots

    def _session_for_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(limit=self.max_concurrency, limit_per_host=self.max_concurrency)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout, headers=self._headers)
            self._loop = loop
            self._slots = asyncio.Semaphore(self.max_concurrency)
        return self._session

    def _backoff(self, attempt: int) -> float:
        return min(self.max_backoff_s, self.backoff_s * (2**attempt)) * (0.5 + random.random() / 2)

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one request (retrying transient failures) and return the decoded JSON answer."""
        url = self.base_url + path
        session = self._session_for_loop()
        data = encode_body(body)
        headers = _JSON_HEADERS if data is not None else None
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self._backoff(attempt - 1))
            try:
                async with session.request(method, url, data=data, headers=headers) as response:
                    status = response.status
                    raw = await response.read()
            except aiohttp.ConnectionTimeoutError as exc:
                last = f"connect timeout ({exc!r})"
                continue
            except (TimeoutError, aiohttp.ServerTimeoutError):
                raise EngineTimeoutError(
                    f"{self.owner}: no answer from {url} within the timeout ({self._timeout.total} s); "
                    "raise timeout_s for long generations"
                ) from None
            except _RETRY_EXCEPTIONS as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            except aiohttp.ClientError as exc:
                raise EngineError(f"{self.owner}: HTTP error talking to {url}: {exc!r}") from None
            if status >= 500 or status == 429:
                last = f"HTTP {status}: {error_message(raw.decode(errors='replace'))}"
                continue
            if status >= 400:
                message = error_message(raw.decode(errors="replace"))
                error = ContextOverflowError if is_context_overflow(message) else BadRequestError
                raise error(f"{self.owner}: the server rejected the request (HTTP {status}): {message}")
            try:
                return decode_body(raw)  # a bare NaN token parses to float nan; output validation reports it
            except ValueError:
                raise InvalidOutputError(
                    f"{self.owner}: {url} answered with invalid JSON: {raw[:200].decode(errors='replace')!r}"
                ) from None
        tries = self.max_retries + 1
        if last.startswith("HTTP"):
            raise ServerError(f"{self.owner}: {url} failed {tries} times; last answer {last}")
        raise UnreachableError(f"{self.owner}: could not reach {url} after {tries} attempts ({last}); {self._hint}")

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
