"""The transports rollgym opens to an MCP server: a stdio process on the host (the explicit opt-in), or a
streamable-HTTP URL."""

from __future__ import annotations

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rollgym.envs.mcp.connection import Transport
from rollgym.envs.mcp.declaration import MCPServerConfig


def transport_of(config: MCPServerConfig) -> Transport:
    """How to reach the server `config` declares (stdio on the host, or its URL)."""
    if config.command is not None:
        params = StdioServerParameters(command=config.command, args=config.args, env=config.env or None, cwd=config.cwd)
        return lambda stderr: stdio_client(params, errlog=stderr)
    url = config.url or ""
    return lambda stderr: streamable_http_client(url, http_client=create_mcp_http_client(headers=config.headers))
