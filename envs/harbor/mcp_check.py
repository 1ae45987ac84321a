"""`rollgym validate`'s check of a Harbor task's `[[environment.mcp_servers]]`: each declared server is started once
(a stdio server inside a fresh sandbox of the task's image, as an episode starts it), shakes hands and lists its
tools, and is stopped; the ones that do not start are reported, each with why."""

from __future__ import annotations

import asyncio

from rollgym.envs.harbor.folders import HarborTask
from rollgym.envs.harbor.mcp import harbor_mcp_servers
from rollgym.envs.harbor.sandbox_config import task_sandbox
from rollgym.envs.mcp.declaration import MCPServerConfig
from rollgym.envs.sandbox import DockerSandbox, SandboxConfig


async def _start_each(servers: tuple[MCPServerConfig, ...], sandbox: DockerSandbox) -> dict[str, str]:
    """Each server started and stopped in turn; why each one that did not start failed, by name."""
    from rollgym.envs.mcp.connection import MCPConnection  # the `mcp` SDK: only for a task that declares servers
    from rollgym.envs.mcp.errors import MCPServerError
    from rollgym.envs.mcp.transports import transport_of

    failed: dict[str, str] = {}
    for config in servers:
        connection = MCPConnection(config, transport_of(config, sandbox))
        try:
            await connection.start()
        except MCPServerError as exc:  # `start` has stopped it
            failed[config.name] = str(exc)
            continue
        await connection.close()
    return failed


def servers_that_do_not_start(task: HarborTask, image: str, workdir: str) -> tuple[dict[str, str], dict[str, str]]:
    """The task's stdio servers that did not start in a fresh sandbox of its image (the task's fault), and its URL
    servers that could not be reached (infrastructure), each with why; two empty dicts for a task without servers."""
    servers = harbor_mcp_servers(task.task_id, task.config.environment.mcp_servers)
    if not servers:
        return {}, {}
    with DockerSandbox(SandboxConfig(**{"image": image, "workdir": workdir, **task_sandbox(task)})) as sandbox:
        failed = asyncio.run(_start_each(servers, sandbox))
    stdio = {s.name for s in servers if s.is_stdio}
    return (
        {name: why for name, why in failed.items() if name in stdio},
        {name: why for name, why in failed.items() if name not in stdio},
    )
