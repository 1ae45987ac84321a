"""`MCPServerConfig`: how an environment declares one MCP server, a stdio command or a streamable-HTTP URL (the
shape Harbor's `[environment] mcp_servers` entries map onto)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rollgym.envs.mcp.errors import MCPServerError


class MCPServerConfig(BaseModel):
    """One MCP server. A stdio server runs inside the environment's sandbox, or, only with `host=True`, as a process
    on the machine rollgym runs on (an explicit opt-in: the server is not sandboxed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="the server's name in errors and records")
    transport: Literal["stdio", "streamable-http"] | None = Field(
        default=None, description="stdio for `command`, streamable-http for `url`; inferred when left out"
    )
    command: str | None = Field(default=None, description="the executable of a stdio server")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="environment variables added to the server's")
    cwd: str | None = None
    url: str | None = Field(default=None, description="a streamable-HTTP server's endpoint, e.g. http://h:8000/mcp")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent to a URL server")
    host: bool = Field(default=False, description="run a stdio server on the host, outside any sandbox (opt-in)")
    prefix: str = Field(default="", description="prepended to each tool's name (two servers with the same names)")
    call_timeout_s: float = Field(default=60.0, gt=0, description="a call with no answer by then is a tool error")
    start_timeout_s: float = Field(default=60.0, gt=0, description="start, handshake and tool listing must end by then")

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r}: give exactly one of `command` (stdio) and `url` (HTTP)")
        inferred = "stdio" if self.command is not None else "streamable-http"
        if self.transport is not None and self.transport != inferred:
            given = "command" if self.command is not None else "url"
            raise ValueError(f"MCP server {self.name!r}: transport {self.transport!r} does not go with `{given}`")
        return self

    @property
    def is_stdio(self) -> bool:
        """Whether rollgym starts this server as a process (a URL server runs elsewhere and is only connected to)."""
        return self.command is not None


def declared_servers(env_name: str, servers: Iterable[Any], sandboxed: bool) -> tuple[MCPServerConfig, ...]:
    """An environment's MCP servers as configs (dicts are validated). A stdio server runs inside the environment's
    sandbox; one of an environment without a sandbox is refused unless declared `host=True` (run on this machine)."""
    configs = tuple(s if isinstance(s, MCPServerConfig) else MCPServerConfig.model_validate(s) for s in servers)
    names = [c.name for c in configs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise MCPServerError(f"{env_name} declares MCP server name(s) {', '.join(twice)} more than once")
    for config in configs:
        if not config.is_stdio or config.host or sandboxed:  # a URL; the opt-in; inside the environment's sandbox
            continue
        command = " ".join([config.command or "", *config.args])
        raise MCPServerError(
            f"{env_name} declares the stdio MCP server {config.name!r} ({command}) and has no sandbox to run it in: "
            f"rollgym runs nothing an environment brings on this machine unless told to; declare it `host=True` to "
            f"run it here, not sandboxed (docs/environments.md#mcp-servers), or give a `url`"
        )
    return configs
