"""`MCPServers`: an episode's running MCP servers, started after the environment's `setup` and stopped before its
`teardown`; their tools join the environment's `ToolSet` while they run."""

from __future__ import annotations

import asyncio
from typing import Any

from rollgym.envs.core.tools import ToolSet
from rollgym.envs.mcp.connection import MCPConnection
from rollgym.envs.mcp.declaration import MCPServerConfig
from rollgym.envs.mcp.errors import MCPServerDiedError, MCPServerError
from rollgym.envs.mcp.server_tools import MCPTool
from rollgym.envs.mcp.transports import transport_of


class MCPServers:
    """The servers of one episode and the tools they added (taken out again by `stop`)."""

    def __init__(self, configs: tuple[MCPServerConfig, ...], sandbox: Any = None) -> None:
        """`sandbox`: the environment's, where its stdio servers not declared `host=True` run."""
        self.connections = [MCPConnection(c, transport_of(c, sandbox)) for c in configs]
        self.tool_names: list[str] = []

    async def start(self, toolset: ToolSet) -> None:
        """Start every server at once and join their tools; on any failure stop them all and raise `MCPServerError`."""
        started = await asyncio.gather(*(c.start() for c in self.connections), return_exceptions=True)
        failed = [r for r in started if isinstance(r, BaseException)]
        try:
            if failed:
                raise failed[0] if isinstance(failed[0], MCPServerError) else MCPServerError(str(failed[0]))
            tools = [MCPTool(c, t, c.config.prefix) for c in self.connections for t in c.tools]
            taken = set(toolset.tools)
            for tool in tools:
                if tool.name in taken:
                    raise MCPServerError(
                        f"MCP server {tool.connection.config.name!r} has a tool named {tool.name!r}, which the "
                        f"environment has already; give the server a `prefix`"
                    )
                taken.add(tool.name)
        except BaseException:
            await self.stop(toolset)
            raise
        toolset.tools.update({t.name: t for t in tools})
        self.tool_names = [t.name for t in tools]
        if MCPServerDiedError not in toolset.fatal_errors:
            toolset.fatal_errors = (*toolset.fatal_errors, MCPServerDiedError)

    async def stop(self, toolset: ToolSet) -> None:
        """Take the servers' tools out of `toolset` and stop the servers; idempotent."""
        for name in self.tool_names:
            toolset.tools.pop(name, None)
        self.tool_names = []
        await asyncio.gather(*(c.close() for c in self.connections), return_exceptions=True)
