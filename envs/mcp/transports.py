"""The transports rollgym opens to an MCP server: a stdio process inside the environment's sandbox, one on the host
(the explicit opt-in), or a streamable-HTTP URL."""

from __future__ import annotations

from typing import Any

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rollgym.envs.mcp.connection import Transport
from rollgym.envs.mcp.declaration import MCPServerConfig
from rollgym.envs.mcp.errors import MCPServerError
from rollgym.envs.mcp.sandbox_stdio import sandbox_stdio_client


def transport_of(config: MCPServerConfig, sandbox: Any = None) -> Transport:
    """How to reach the server `config` declares: stdio inside the environment's sandbox (`sandbox.attach`), stdio on
    the host (`host=True`), or its URL."""
    if config.command is not None and not config.host:
        if not callable(getattr(sandbox, "attach", None)):
            raise MCPServerError(
                f"MCP server {config.name!r} runs inside the environment's sandbox, and after setup the environment "
                f"has none that can attach a process (its `sandbox`, e.g. a DockerSandbox, is {type(sandbox).__name__})"
            )
        return lambda stderr: sandbox_stdio_client(sandbox, config, stderr)
    if config.command is not None:
        params = StdioServerParameters(command=config.command, args=config.args, env=config.env or None, cwd=config.cwd)
        return lambda stderr: stdio_client(params, errlog=stderr)
    url = config.url or ""
    return lambda stderr: streamable_http_client(url, http_client=create_mcp_http_client(headers=config.headers))
