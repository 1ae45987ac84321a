"""A Harbor task's `[[environment.mcp_servers]]` (Harbor 0.25's `MCPServerConfig`: `name`, `transport`, `command`,
`args`, `url`, `headers`) as rollgym's `MCPServerConfig`s: stdio servers run inside the task's sandbox."""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.mcp.declaration import MCPServerConfig, declared_servers
from rollgym.envs.mcp.errors import MCPServerError

HARBOR_KEYS = ("name", "command", "args", "url", "headers")


def transport_of(entry: dict[str, Any]) -> str:
    """The entry's transport as Harbor reads it: `sse` when left out, `http` meaning `streamable-http`."""
    transport = entry.get("transport", "sse")
    return "streamable-http" if transport == "http" else str(transport)


def mcp_refusals(entries: list[dict[str, Any]]) -> list[str]:
    """One phrase per server rollgym does not run (an SSE server: rollgym speaks stdio and streamable HTTP)."""
    return [
        f"[[environment.mcp_servers]] {e.get('name')!r}: transport = 'sse' (rollgym connects to stdio and "
        f'streamable-http MCP servers; serve it over streamable HTTP, or give `transport = "stdio"` and `command`)'
        for e in entries
        if transport_of(e) == "sse"
    ]


def harbor_mcp_servers(task_id: str, entries: list[dict[str, Any]]) -> tuple[MCPServerConfig, ...]:
    """The task's servers, checked (`InvalidTaskError` naming the entry); `${VAR}` in headers come from rollgym's
    environment, as Harbor resolves them."""
    configs = []
    for entry in entries:
        fields = {k: entry[k] for k in HARBOR_KEYS if k in entry}
        fields["headers"] = {k: os.path.expandvars(str(v)) for k, v in (entry.get("headers") or {}).items()}
        try:
            configs.append(MCPServerConfig(transport=transport_of(entry), **fields))  # pyright: ignore[reportArgumentType]  # checked by the model
        except (ValidationError, TypeError) as exc:
            raise InvalidTaskError(
                f"{task_id}: [[environment.mcp_servers]] {entry.get('name')!r} is not valid: {exc}"
            ) from None
    try:
        return declared_servers(task_id, configs, sandboxed=True)
    except MCPServerError as exc:  # a name given twice
        raise InvalidTaskError(str(exc)) from None
