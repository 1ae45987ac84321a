"""MCP servers for the MCP tests: the faulty fixture server (tests/fixtures/mcp), the real ones `.ci/mcp-up` installs
(PyPI's mcp-server-time, npm's server-memory), and a small environment whose tools are only its servers'."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rollgym.envs import Env

FAULTY = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "faulty_server.py"
CACHE = Path(os.environ.get("ROLLGYM_CACHE", Path.home() / ".cache" / "rollgym")) / "mcp"
TIME_SERVER = CACHE / "time-venv" / "bin" / "mcp-server-time"
MEMORY_SERVER = CACHE / "npm" / "node_modules" / ".bin" / "mcp-server-memory"


def faulty(**overrides: Any) -> dict[str, Any]:
    """The faulty fixture server as a host-side stdio declaration (its stderr quiet unless it fails)."""
    return {"name": "faulty", "command": sys.executable, "args": [str(FAULTY)], "host": True, **overrides}


def installed(path: Path) -> str:
    """The path of a server `.ci/mcp-up` installs, or the test is skipped saying how to install it."""
    if not path.exists():
        pytest.skip(f"{path} is not installed: run `bash .ci/mcp-up` (part of `.ci/setup --tests`)")
    return str(path)


class ServerToolsEnv(Env):
    """A task is a question; the environment's tools are its MCP servers' only."""

    async def setup(self, task: dict[str, Any] | None) -> tuple[list[dict], dict[str, Any]]:
        task = task or {"task_id": "t", "question": "Use a tool."}
        return [{"role": "user", "content": task["question"]}], {"task_id": task["task_id"]}

    async def compute_reward(self) -> tuple[float, dict[str, float]]:
        return 0.0, {}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """An assistant message calling one tool."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": function}]}


PLAIN = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "plain_server.py"


class ServerInSandboxEnv(ServerToolsEnv):
    """An environment with a sandbox (rollgym's base image): its stdio servers run inside it, the plain fixture server
    copied in by `setup`."""

    def __init__(self, mcp_servers: Any = None) -> None:
        super().__init__(mcp_servers=mcp_servers)
        self.sandbox: Any = None

    @classmethod
    def sandbox_placement(cls, row: dict, overrides: dict) -> dict:
        return dict(overrides)

    def agent_workspace(self) -> Any:
        raise NotImplementedError

    async def agent_outcome(self) -> dict:
        return {}

    async def setup(self, task: dict[str, Any] | None) -> tuple[list[dict], dict[str, Any]]:
        from rollgym.envs.sandbox import SandboxConfig, base_image_name, start_sandbox

        self.sandbox = await start_sandbox(SandboxConfig(image=base_image_name(), task_id="mcp", mem_limit="256m"))
        self.sandbox.write_file("/tmp/plain_server.py", PLAIN.read_text())
        return await super().setup(task)

    async def teardown(self) -> None:
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            await sandbox.aclose()


def plain_in_sandbox(**overrides: Any) -> dict[str, Any]:
    """The plain fixture server, declared to run inside the environment's sandbox (no `host`)."""
    return {"name": "plain", "command": "python3", "args": ["-u", "/tmp/plain_server.py"], **overrides}
