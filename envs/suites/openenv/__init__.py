"""OpenEnv environment servers as rollgym environments: `openenv/env-v0` with `url=` (a running server) or `image=`
(one rollgym runs in its Docker sandbox), over OpenEnv's own WebSocket protocol. Importing this room imports neither
openenv nor the MCP SDK."""

from rollgym.envs.suites.openenv.suite_ids import ENV_ID, SUITE, register_openenv

__all__ = ["ENV_ID", "SUITE", "register_openenv"]
