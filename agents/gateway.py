"""`SessionGateway`: one proxy session, and nothing else, served on a Unix socket that is mounted into one sandbox.

The agent in the sandbox reaches the proxy only through this socket (its container has no network). Every request
is checked: a path outside `/sessions/{its id}/` is refused (403), so another session's URL, the proxy's session
list or its admin routes are out of reach. The proxy's API key is added here, so the agent never holds it. Requests
are relayed to the proxy with httpx and answered as they stream (SSE included), over uvicorn's Unix-socket server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn

#: headers that describe one hop, not the message (RFC 9110 section 7.6.1), plus the client's own credentials
_HOP = {b"host", b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade"}
_CREDENTIALS = {b"authorization", b"x-api-key"}


class _Quiet(uvicorn.Server):
    """A uvicorn server that leaves the host program's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


class SessionGateway:
    """Serve `session_url` (`http://host:port/sessions/{id}/v1`) on the Unix socket `path`, that session only."""

    def __init__(self, session_url: str, path: str, api_key: str | None = None) -> None:
        parts = urlsplit(session_url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        segments = parts.path.strip("/").split("/")
        if len(segments) < 2 or segments[0] != "sessions":
            raise ValueError(f"{session_url!r} is not a proxy session URL (.../sessions/{{id}}/v1)")
        self.prefix = f"/sessions/{segments[1]}/"
        self.path, self.api_key = path, api_key
        self.refused: list[str] = []  # the paths refused, for the record
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0))
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        own = path.startswith(self.prefix) or path == self.prefix.rstrip("/")  # (Claude Code probes the root)
        if not own or "/../" in path or path.endswith("/.."):
            self.refused.append(path)
            message = f"this sandbox reaches only its own proxy session ({self.prefix}...), not {path}"
            body = json.dumps({"error": {"message": message, "type": "forbidden", "code": "forbidden"}}).encode()
            await send(
                {"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP | _CREDENTIALS]
        if self.api_key:
            headers.append((b"authorization", f"Bearer {self.api_key}".encode()))
        raw = (scope.get("raw_path") or path.encode()).decode("latin-1")  # as sent: the proxy decodes it as we did
        query = scope.get("query_string", b"").decode("latin-1")
        url = f"{self.origin}{raw}" + (f"?{query}" if query else "")
        request = self._client.build_request(scope["method"], url, headers=headers, content=b"".join(chunks))
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            body = json.dumps({"error": {"message": f"the proxy did not answer: {exc}", "type": "bad_gateway"}})
            await send(
                {"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body.encode()})
            return
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    async def start(self) -> SessionGateway:
        config = uvicorn.Config(self, uds=self.path, lifespan="off", access_log=False, log_level="warning")
        self._server = _Quiet(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError(f"the session gateway on {self.path} stopped during startup")
            await asyncio.sleep(0.005)
        os.chmod(self.path, 0o666)  # the agent may run as another user than this process
        return self

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(Exception):
                await self._task
            self._server = self._task = None
        await self._client.aclose()

    async def __aenter__(self) -> SessionGateway:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
