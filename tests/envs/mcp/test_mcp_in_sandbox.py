"""A stdio MCP server of a sandboxed environment runs inside its sandbox (a real Docker container), never on the
host: its tools join the environment's, its answers come from the container, and its death fails the episode."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from support.mcp import ServerInSandboxEnv, call, plain_in_sandbox

from rollgym.envs import is_sandboxed
from rollgym.envs.mcp import MCPServerDiedError

pytestmark = pytest.mark.docker


def test_the_server_runs_inside_the_sandbox_and_its_death_fails_the_episode(base_image):
    assert is_sandboxed(ServerInSandboxEnv)

    async def run():
        env = ServerInSandboxEnv(mcp_servers=[plain_in_sandbox()])
        try:
            _, info = await env.areset()
            assert {t["function"]["name"] for t in info["tools"]} == {"where", "echo", "crash", "malformed"}
            _, _, _, _, info = await env.astep(call("where"))
            where = json.loads(info["tool_calls"][0].result)
            assert where["in_container"] and where["hostname"] != socket.gethostname()
            _, _, _, _, info = await env.astep(call("echo", text="from inside"))
            assert info["tool_calls"][0].result == "from inside"
            messages, _, terminated, _, info = await env.astep(call("crash"))
            assert terminated and info["finish_reason"] == "error" and isinstance(info["error"], MCPServerDiedError)
            assert "plain server: crashing as asked" in str(info["error"])  # its stderr, from inside the container
        finally:
            await env.aclose()
        assert env.sandbox is None

    asyncio.run(run())
