"""MCP servers as tools for any environment: declare them on an `Env` (`mcp_servers=`), and their tools join the
environment's own. Importing this package does not import the `mcp` SDK (the optional extra `rollgym[mcp]`)."""

from rollgym.envs.mcp.declaration import MCPServerConfig
from rollgym.envs.mcp.errors import MCPServerDiedError, MCPServerError, MCPToolFailure

__all__ = ["MCPServerConfig", "MCPServerDiedError", "MCPServerError", "MCPToolFailure"]
