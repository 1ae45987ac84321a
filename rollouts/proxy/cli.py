"""`rollgym proxy`: build the engine and tokenizer from specs, pre-create a session, serve until Ctrl-C."""

from __future__ import annotations

import asyncio
from typing import Callable

from rollgym.errors import UsageError
from rollgym.rollouts.policy import Policy

from .server import RecordingProxy
from .store import ProxySettings

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(model: str, *, chat_template: str | None = None, tokenizer: str | None = None, host: str = "127.0.0.1",
          port: int = 8000, api_key: str | None = None, session_id: str = "default", settings: ProxySettings | None = None,
          log: Callable[[str], None] = print, engine_kwargs: dict | None = None) -> None:
    """Serve a recording proxy for engine spec `model` (blocks); refuses a public bind without an API key."""
    if host not in LOOPBACK and not api_key:
        raise UsageError(f"refusing to listen on {host} without --api-key (anyone who can reach it could use the model)")
    policy = Policy(model, tokenizer=tokenizer, chat_template=chat_template, log=log, engine_kwargs=engine_kwargs)
    proxy = RecordingProxy(policy, host=host, port=port, api_key=api_key, settings=settings, log_level="info",
                           handle_signals=True)

    async def main() -> None:
        try:
            await proxy.start()
            sess = proxy.session(session_id)
            log(f"rollgym proxy for {model} on {proxy.base_url}")
            log(f"session {sess.id!r}: OPENAI_BASE_URL={sess.base_url}")
            log(f"new sessions: POST {proxy.base_url}/sessions; trajectory: GET {proxy.base_url}/sessions/<id>")
            assert proxy._task is not None
            await proxy._task
        finally:
            await proxy.stop()
            await policy.aclose()

    asyncio.run(main())
