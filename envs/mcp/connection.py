"""`MCPConnection`: one MCP server's client session, kept open by a task of its own (the SDK's anyio scopes must close
in the task that opened them, and an episode's reset, steps and close may each run in another task)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO, cast

import mcp_types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from rollgym.envs.mcp.declaration import MCPServerConfig
from rollgym.envs.mcp.errors import MCPServerDiedError, MCPServerError, MCPToolFailure

#: A transport: an async context manager over the (read, write) streams of one server, given a file for its stderr.
Transport = Callable[[TextIO], contextlib.AbstractAsyncContextManager[Any]]
_STDERR_TAIL = 600


class MCPConnection:
    """A started server's session and tools; `call` maps the server's failures onto rollgym's (see `call`)."""

    def __init__(self, config: MCPServerConfig, transport: Transport) -> None:
        self.config = config
        self.tools: list[mcp_types.Tool] = []
        self._transport = transport
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stderr = cast(TextIO, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))  # a text file

    async def start(self) -> list[mcp_types.Tool]:
        """Start the server, shake hands and list its tools, within `start_timeout_s`; `MCPServerError` otherwise."""
        self._task = asyncio.create_task(self._own(), name=f"rollgym-mcp-{self.config.name}")
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait({self._task, ready}, timeout=self.config.start_timeout_s, return_when="FIRST_COMPLETED")
        finally:
            ready.cancel()
        if self._ready.is_set():
            return self.tools
        if self._task.done() and not self._task.cancelled() and self._task.exception() is not None:
            why = _exception_text(self._task.exception())
        else:
            why = f"no handshake within {self.config.start_timeout_s:g}s"
        error = MCPServerError(f"MCP server {self.config.name!r} did not start ({why}){self._stderr_tail()}")
        await self.close()
        raise error

    async def _own(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport(self._stderr))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            self.tools = [tool async for tool in _all_tools(session)]
            self._session = session
            self._ready.set()
            await self._stop.wait()

    async def call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """The server's result; `MCPToolFailure` for a time-out, a refused or malformed call (told to the model), and
        `MCPServerDiedError` when the connection is gone (the episode fails)."""
        session = self._session
        if session is None or self._task is None or self._task.done():
            raise self._died("its connection is closed")
        try:
            return await session.call_tool(name, arguments, read_timeout_seconds=self.config.call_timeout_s)
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise MCPToolFailure(
                    f"no answer from MCP server {self.config.name!r} within {self.config.call_timeout_s:g}s", "timeout"
                ) from exc
            if exc.code == mcp_types.CONNECTION_CLOSED:
                raise self._died("its connection closed") from exc
            raise MCPToolFailure(f"the MCP server refused the call: {exc.error.message}") from exc
        except ValidationError as exc:
            raise MCPToolFailure(f"the MCP server's result is malformed: {_first_error(exc)}", "bad_result") from exc
        except (OSError, EOFError) as exc:
            raise self._died(f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        """Stop the server (its transport ends the process); idempotent, and quiet about a server already dead."""
        self._stop.set()
        task, self._task, self._session = self._task, None, None
        if task is not None:
            if not task.done():
                if not self._ready.is_set():  # still starting: nothing to end gracefully
                    task.cancel()
                if not (await asyncio.wait({task}, timeout=10))[0]:
                    task.cancel()
                    await asyncio.wait({task}, timeout=5)
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a dead server's transport error was reported already, or is moot
        self._stderr.close()

    def _died(self, why: str) -> MCPServerDiedError:
        return MCPServerDiedError(f"MCP server {self.config.name!r} died mid-episode: {why}{self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read().strip()
        except (OSError, ValueError):  # closed already
            return ""
        return f"; its stderr ends: {text[-_STDERR_TAIL:]}" if text else ""


async def _all_tools(session: ClientSession) -> AsyncIterator[mcp_types.Tool]:
    """Every tool the server lists, page after page."""
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        for tool in page.tools:
            yield tool
        cursor = page.next_cursor
        if not cursor:
            return


def _exception_text(exc: BaseException | None) -> str:
    """An exception's message, the first leaf's when it is an exception group (anyio's task groups raise them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if exc is not None else ""


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
