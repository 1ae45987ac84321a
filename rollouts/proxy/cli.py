"""`rollgym proxy`: build the engine and tokenizer from specs, pre-create a session, serve until Ctrl-C or
SIGTERM; either one shuts the server down gracefully and closes the engine (exit 130 or 143)."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Callable

from rollgym.errors import UsageError
from rollgym.rollouts.policy import Policy

from .access_log import LOGGER
from .server import RecordingProxy
from .store import ProxySettings

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _print_access_log() -> None:
    """The CLI prints one line per request (`rollgym.proxy.access`) to stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def serve(model: str, *, chat_template: str | None = None, tokenizer: str | None = None, host: str = "127.0.0.1",
          port: int = 8000, api_key: str | None = None, session_id: str = "default", settings: ProxySettings | None = None,
          log: Callable[[str], None] = print, engine_kwargs: dict | None = None) -> int:
    """Serve a recording proxy for engine spec `model` until SIGINT or SIGTERM (blocks); return the exit code
    (128 + the signal). Refuses a public bind without an API key."""
    if host not in LOOPBACK and not api_key:
        raise UsageError(f"refusing to listen on {host} without --api-key (anyone who can reach it could use the model)")
    policy = Policy(model, tokenizer=tokenizer, chat_template=chat_template, log=log, engine_kwargs=engine_kwargs)
    proxy = RecordingProxy(policy, host=host, port=port, api_key=api_key, settings=settings, log_level="info")
    _print_access_log()
    stopped_by: list[int] = []

    def on_signal(signum: int) -> None:
        stopped_by.append(signum)
        if proxy._server is not None:
            proxy._server.should_exit = True  # graceful: uvicorn finishes in-flight requests (5 s at most)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            await proxy.start()
            sess = proxy.session(session_id)
            log(f"rollgym proxy for {model} on {proxy.base_url}")
            log(f"session {sess.id!r}: OPENAI_BASE_URL={sess.base_url}")
            log(f"  Anthropic clients (Claude Code): ANTHROPIC_BASE_URL={sess.base_url.removesuffix('/v1')}")
            log(f"new sessions: POST {proxy.base_url}/sessions; trajectory: GET {proxy.base_url}/sessions/<id>")
            assert proxy._task is not None
            await proxy._task
        finally:
            await proxy.stop()
            await policy.aclose()

    asyncio.run(main())
    return 128 + (stopped_by[0] if stopped_by else signal.SIGINT)
