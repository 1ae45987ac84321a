"""One access-log line per request (method, path, status, milliseconds, session, segment), to the
`rollgym.proxy.access` logger: what a user reads to see which calls an agent made and how they matched."""

from __future__ import annotations

import logging
import time

LOGGER = logging.getLogger("rollgym.proxy.access")


class AccessLog:
    """Pure ASGI middleware (outermost, so refused requests are logged too); the line is written when the
    response ends, so a streamed answer is timed whole."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not LOGGER.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        start, seen = time.perf_counter(), {"status": 0, "segment": "-"}

        async def logged_send(message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                for name, value in message.get("headers") or []:
                    if name.lower() == b"x-rollgym-segment":
                        seen["segment"] = value.decode()
            await send(message)

        try:
            await self.app(scope, receive, logged_send)
        finally:
            path = scope["path"]
            session = path.split("/")[2] if path.startswith("/sessions/") and path.count("/") >= 2 else "-"
            LOGGER.info(
                "%s %s %s %.1f ms session=%s segment=%s",
                scope["method"],
                path,
                seen["status"] or "-",
                (time.perf_counter() - start) * 1000,
                session,
                seen["segment"],
            )
