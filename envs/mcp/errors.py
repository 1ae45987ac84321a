"""Errors of MCP servers, rooted at `EnvError`: a server that cannot start or dies fails the episode."""

from __future__ import annotations

from rollgym.envs.core.tools import ToolFailure
from rollgym.errors import EnvError


class MCPServerError(EnvError, RuntimeError):
    """An MCP server could not be declared, started or listed; the message names the server and why."""


class MCPServerDiedError(MCPServerError):
    """An MCP server's connection closed mid-episode (its process exited): an environment failure, not a tool error."""


class MCPToolFailure(ToolFailure):
    """One MCP tool call failed in a way the model is told (an error result, a time-out, a malformed result)."""


__all__ = ["MCPServerDiedError", "MCPServerError", "MCPToolFailure"]
