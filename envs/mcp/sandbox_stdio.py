"""The stdio transport to an MCP server inside a sandbox: the server runs there (`sandbox.attach`, a `docker exec`
with stdin and stdout attached), never on the host, and speaks JSON-RPC lines over that connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TextIO

import anyio
import mcp_types
from mcp.shared.message import SessionMessage

from rollgym.envs.mcp.declaration import MCPServerConfig


@contextlib.asynccontextmanager
async def sandbox_stdio_client(sandbox: Any, config: MCPServerConfig, stderr: TextIO) -> AsyncIterator[Any]:
    """(read, write) streams of the session with `config`'s server started inside `sandbox`; its stderr's tail goes to
    `stderr` when its output ends, before the session learns the connection closed."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes | None] = asyncio.Queue()

    def on_stdout(data: bytes | None) -> None:
        loop.call_soon_threadsafe(chunks.put_nowait, data)

    command = [config.command or "", *config.args]
    process = await asyncio.to_thread(sandbox.attach, command, on_stdout, config.env or None, config.cwd)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def stdout_reader() -> None:
        buffer = b""
        async with read_writer:
            while (chunk := await chunks.get()) is not None:
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        await read_writer.send(_parse(line))
            stderr.write(process.stderr_tail.decode(errors="replace"))
            stderr.flush()

    async def stdin_writer() -> None:
        async with write_reader:
            async for message in write_reader:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await asyncio.to_thread(process.send, data.encode())
                except OSError:
                    await read_writer.aclose()  # the session sees the connection end, not a request hanging
                    return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(stdout_reader)
        tasks.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await asyncio.to_thread(process.close)
            tasks.cancel_scope.cancel()


def _parse(line: bytes) -> SessionMessage | Exception:
    """One line of the server's stdout as a message, or the parse error as a value (the session surfaces it)."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc
