"""How rollgym reaches an OpenEnv server's session: a `Channel` carries OpenEnv's WebSocket text messages both ways,
over a WebSocket to a URL (`WebSocketChannel`) or through a relay inside the server's sandbox (`image_server.py`)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import aiohttp

from rollgym.envs.suites.openenv.errors import OpenEnvServerError
from rollgym.envs.suites.openenv.wire import CLOSE_MESSAGE, ServerSchemas


class Channel(Protocol):
    """One session with a server: send a message, receive the answer, close."""

    async def send(self, text: str) -> None: ...

    async def receive(self, timeout_s: float) -> str: ...

    async def close(self) -> None: ...


def ws_url(url: str) -> str:
    """The `/ws` endpoint of a server's base URL (http -> ws, https -> wss), as `EnvClient` derives it."""
    base = url.rstrip("/")
    for plain, secure in (("http://", "ws://"), ("https://", "wss://")):
        if base.startswith(plain):
            base = secure + base[len(plain) :]
    return base if base.endswith("/ws") else base + "/ws"


def http_url(url: str) -> str:
    """A server's base URL over HTTP (a ws:// one given turned back)."""
    base = url.rstrip("/").removesuffix("/ws")
    for secure, plain in (("ws://", "http://"), ("wss://", "https://")):
        if base.startswith(secure):
            base = plain + base[len(secure) :]
    return base


class WebSocketChannel:
    """A session on a server's `/ws` endpoint (aiohttp's WebSocket client)."""

    def __init__(self, http: aiohttp.ClientSession, socket: aiohttp.ClientWebSocketResponse, url: str) -> None:
        self._http, self._socket, self.url = http, socket, url

    @classmethod
    async def open(cls, url: str, connect_timeout_s: float, max_message_mb: float = 100.0) -> WebSocketChannel:
        """Connect to `url`'s `/ws`; `OpenEnvServerError` when nothing answers there within the time-out."""
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout_s))
        try:
            socket = await asyncio.wait_for(
                http.ws_connect(ws_url(url), max_msg_size=int(max_message_mb * 2**20), autoping=True),
                connect_timeout_s,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            await http.close()
            raise OpenEnvServerError(
                f"the OpenEnv server at {url} cannot be reached ({type(exc).__name__}: {exc or 'timed out'})"
            ) from exc
        return cls(http, socket, url)

    async def send(self, text: str) -> None:
        try:
            await self._socket.send_str(text)
        except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
            raise OpenEnvServerError(f"the OpenEnv server at {self.url} closed the session: {exc}") from exc

    async def receive(self, timeout_s: float) -> str:
        try:
            message = await self._socket.receive(timeout=timeout_s)
        except TimeoutError as exc:
            raise OpenEnvServerError(f"the OpenEnv server at {self.url} did not answer within {timeout_s:g}s") from exc
        if message.type == aiohttp.WSMsgType.TEXT:
            return message.data
        raise OpenEnvServerError(f"the OpenEnv server at {self.url} closed the session ({message.type.name})")

    async def close(self) -> None:
        try:
            if not self._socket.closed:
                await self._socket.send_str(CLOSE_MESSAGE)
                await self._socket.close()
        except (aiohttp.ClientError, ConnectionError, RuntimeError):
            pass  # a server already gone has nothing left to close
        finally:
            await self._http.close()


async def fetch_schemas(url: str, timeout_s: float) -> ServerSchemas:
    """`GET /schema` of the server at `url`; `OpenEnvServerError` when it cannot be reached."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http:
            async with http.get(http_url(url) + "/schema") as response:
                response.raise_for_status()
                body: Any = await response.json()
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
        raise OpenEnvServerError(
            f"the OpenEnv server at {url} cannot be reached ({type(exc).__name__}: {exc or 'timed out'})"
        ) from exc
    return ServerSchemas.model_validate(body)
