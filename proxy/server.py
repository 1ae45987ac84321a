"""`RecordingProxy`: the proxy served by uvicorn on loopback, from Python (async or in a thread) or the CLI.

`async with RecordingProxy(policy) as proxy:` serves on the running event loop, so the engine's
own tasks stay on one loop; agents that block must run in threads (`agent_rollout_func` does this).
`with proxy.in_thread():` serves from a background thread for synchronous code.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn

from rollgym.errors import UsageError
from rollgym.proxy.app import create_app
from rollgym.proxy.service import ProxyCore
from rollgym.proxy.session import ProxySession
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.policy import Policy, as_policy


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves the host program's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class RecordingProxy:
    """An OpenAI-compatible endpoint per session that records token-exact trajectories of a `Policy`.

    `policy` is a `Policy` or its spec string (then the proxy builds it and closes its engine on `stop`).
    """

    def __init__(
        self,
        policy: Policy | str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        settings: ProxySettings | None = None,
        log_level: str = "warning",
        handle_signals: bool = False,
    ) -> None:
        settings = settings or ProxySettings()
        if api_key is not None:
            settings = settings.model_copy(update={"api_key": api_key})
        self.policy, self._owns_policy = as_policy(policy)
        if self.policy.tokenizer is None:
            raise UsageError(
                f"{self.policy.name} is a chat engine without token ids; the recording proxy needs a "
                "token-in/token-out engine"
            )
        self.core = ProxyCore(self.policy, settings)
        self.app = create_app(self.core)
        self.host, self.port, self.log_level, self.handle_signals = host, port, log_level, handle_signals
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def api_key(self) -> str | None:
        return self.core.settings.api_key

    def session(self, session_id: str | None = None, **metadata: Any) -> ProxySession:
        """A new session; its `base_url` is what an OpenAI client takes (`.../sessions/{id}/v1`)."""
        return self.core.create_session(session_id, self.base_url, metadata)

    def get_session(self, session_id: str) -> ProxySession:
        return self.core.store.get(session_id)

    # --- serving on the running loop ---------------------------------------------------------------
    def _bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.set_inheritable(True)
        self.port = sock.getsockname()[1]
        self.core.public_url = self.base_url
        return sock

    async def start(self) -> RecordingProxy:
        sock = self._bind()
        config = uvicorn.Config(
            self.app,
            log_level=self.log_level,
            lifespan="off",
            access_log=False,
            timeout_keep_alive=30,
            timeout_graceful_shutdown=5,
        )
        self._server = (uvicorn.Server if self.handle_signals else _QuietServer)(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise UsageError(f"the proxy server stopped during startup (is {self.host}:{self.port} free?)")
            await asyncio.sleep(0.005)
        return self

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
            self._server = self._task = None
        if self._owns_policy:
            await self.policy.aclose()

    async def serve_forever(self) -> None:
        await self.start()
        assert self._task is not None
        await self._task

    async def __aenter__(self) -> RecordingProxy:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    # --- serving from a thread ---------------------------------------------------------------------
    @contextlib.contextmanager
    def in_thread(self) -> Iterator[RecordingProxy]:
        """Serve from a background thread with its own event loop (the engine runs on that loop)."""
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            try:
                await self.start()
            except BaseException as exc:  # noqa: BLE001 - reported to the caller's thread
                failure.append(exc)
                started.set()
                return
            started.set()
            assert self._task is not None
            try:
                await self._task
            finally:
                await self.stop()  # closes the policy's engine if this proxy built the policy

        thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True, name="rollgym-proxy")
        thread.start()
        started.wait(30)
        if failure:
            raise failure[0]
        try:
            yield self
        finally:
            if self._server is not None:
                self._server.should_exit = True
            thread.join(timeout=30)
            loop.close()
