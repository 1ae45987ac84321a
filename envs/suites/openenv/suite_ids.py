"""The OpenEnv suite's one id, `openenv/env-v0` (the server it runs is a make argument: `url=` or `image=`), and its
registration by name, so listing the catalogue imports nothing of it."""

from __future__ import annotations

from rollgym.envs.core.suites import Suite, register_suite_env

#: rollgym speaks OpenEnv's protocol itself (aiohttp), and reads an `MCPEnvironment`'s tools with the MCP SDK's types
SUITE = Suite(name="openenv", package="mcp", module="mcp_types", extra="openenv")
ENV_ID = "openenv/env-v0"
ENTRY_POINT = "rollgym.envs.suites.openenv.env:make_openenv_env"


def register_openenv() -> None:
    """Register `openenv/env-v0` with gymnasium, by entry point string."""
    register_suite_env(SUITE, ENV_ID, ENTRY_POINT)
