"""Declaring MCP servers: one transport each, and a stdio server runs on the host only when declared `host=True`;
none of it imports the `mcp` SDK until a server starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from support.mcp import ServerToolsEnv, faulty

from rollgym.envs.mcp import MCPServerConfig, MCPServerError


def test_a_server_is_a_command_or_a_url_not_both_nor_neither():
    assert MCPServerConfig(name="s", command="srv").is_stdio
    assert not MCPServerConfig(name="s", url="http://127.0.0.1:1/mcp").is_stdio
    with pytest.raises(ValidationError, match="exactly one of `command`"):
        MCPServerConfig(name="s")
    with pytest.raises(ValidationError, match="exactly one of `command`"):
        MCPServerConfig(name="s", command="srv", url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValidationError, match="transport 'streamable-http' does not go with `command`"):
        MCPServerConfig(name="s", command="srv", transport="streamable-http")
    with pytest.raises(ValidationError, match="extra"):
        MCPServerConfig(name="s", command="srv", comand="typo")  # pyright: ignore[reportCallIssue]  # the typo under test


def test_a_stdio_server_of_an_environment_without_a_sandbox_needs_the_host_opt_in():
    with pytest.raises(MCPServerError, match=r"no sandbox to run it in.*declare it `host=True`"):
        ServerToolsEnv(mcp_servers=[faulty(host=False)])
    assert ServerToolsEnv(mcp_servers=[faulty()]).mcp_servers[0].host  # opted in
    assert ServerToolsEnv(mcp_servers=[{"name": "u", "url": "http://127.0.0.1:1/mcp"}]).mcp_servers  # nothing to run


def test_a_server_name_is_declared_once():
    with pytest.raises(MCPServerError, match="faulty more than once"):
        ServerToolsEnv(mcp_servers=[faulty(), faulty()])


def test_declaring_servers_does_not_import_the_mcp_sdk():
    code = (
        "import sys, rollgym, rollgym.envs.mcp\n"
        "from support.mcp import ServerToolsEnv, faulty\n"
        "ServerToolsEnv(mcp_servers=[faulty()])\n"
        "print('mcp' in sys.modules, 'mcp_types' in sys.modules)"
    )
    tests = str(Path(__file__).resolve().parents[2])  # where `support` is
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), tests) if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["False", "False"], out.stderr
