"""Run an ASGI app with uvicorn on 127.0.0.1 in a background thread, for tests and benchmarks."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn


class LoopbackServer:
    """Context manager: serves `app` on a free loopback port; `base_url` is `http://127.0.0.1:PORT`."""

    def __init__(self, app, *, startup_timeout_s: float = 10.0) -> None:
        self._app = app
        self._timeout = startup_timeout_s
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self._app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:  # a request a test left hanging (a stand-in told to hang) is not waited for
            self._server.should_exit = self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
