"""The MCP servers an environment declares, handed to an agent CLI in its sandbox through the agent's own MCP
configuration (each built-in spec writes its own format); an agent without an MCP client is refused on such a task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.envs.mcp.declaration import MCPServerConfig
from rollgym.errors import UsageError


class AgentWithoutMCPError(UsageError):
    """The task's environment declares MCP servers and the agent has no MCP client to use them."""


def servers_for_agent(spec: Any, servers: Sequence[MCPServerConfig], task_id: str) -> tuple[MCPServerConfig, ...]:
    """The servers `spec`'s CLI gets: all of them, when it has an MCP client (`spec.mcp_client`) and every one runs
    where the agent can reach it; else `AgentWithoutMCPError` / `UsageError` saying which server and why."""
    if not servers:
        return ()
    names = ", ".join(s.name for s in servers)
    if not getattr(spec, "mcp_client", False):
        raise AgentWithoutMCPError(
            f"{spec.name} has no MCP client, and {task_id} declares MCP server(s) {names}, which the agent could not "
            f"use: run the task with an agent that has one (claude-code, codex, opencode) or with rollgym's own tool "
            f"loop (`rollgym generate` without --agent)"
        )
    on_host = [s.name for s in servers if s.is_stdio and s.host]
    if on_host:
        raise UsageError(
            f"{task_id} declares MCP server(s) {', '.join(on_host)} with host=True (run on this machine), which an "
            f"agent inside the sandbox cannot reach: declare them without host=True (run in the sandbox) or by `url`"
        )
    return tuple(servers)


def in_cwd(server: MCPServerConfig) -> tuple[str, list[str]]:
    """The stdio server's command and args, started in its `cwd` through `sh` (for a CLI whose config has no
    working directory)."""
    command, args = server.command or "", list(server.args)
    if server.cwd is None:
        return command, args
    return "sh", ["-c", 'cd "$0" && exec "$@"', server.cwd, command, *args]


def milliseconds(seconds: float) -> int:
    """A time-out in whole milliseconds, as the JSON configs take it."""
    return round(seconds * 1000)
