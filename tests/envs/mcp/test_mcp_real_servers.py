"""Real MCP servers from the registries, installed by `.ci/mcp-up`: PyPI's mcp-server-time (Python) and npm's
@modelcontextprotocol/server-memory (Node), their tools beside each other in one environment, and `check_env`."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from support.mcp import MEMORY_SERVER, TIME_SERVER, ServerToolsEnv, call, installed

import rollgym as rg


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> list[dict]:
    memory = (
        tmp_path_factory.mktemp("mcp") / "memory.jsonl"
    )  # the server keeps its graph on disk, here not in its install
    return [
        {"name": "time", "command": installed(TIME_SERVER), "host": True},
        {"name": "memory", "command": installed(MEMORY_SERVER), "host": True, "env": {"MEMORY_FILE_PATH": str(memory)}},
    ]


def test_a_python_and_a_node_server_answer_through_one_environment(servers):
    env = ServerToolsEnv(mcp_servers=servers)
    try:
        _, info = env.reset()
        names = {t["function"]["name"] for t in info["tools"]}
        assert {"get_current_time", "convert_time", "create_entities", "read_graph"} <= names
        _, _, _, _, info = env.step(call("get_current_time", timezone="UTC"))
        (record,) = info["tool_calls"]
        assert not record.failed, record.result
        now = json.loads(record.result)
        assert now["timezone"] == "UTC" and datetime.fromisoformat(now["datetime"]).year >= 2025
        entity = {"name": "rollgym", "entityType": "project", "observations": ["trains agents"]}
        _, _, _, _, info = env.step(call("create_entities", entities=[entity]))
        assert not info["tool_calls"][0].failed, info["tool_calls"][0].result
        _, _, _, _, info = env.step(call("read_graph"))
        assert "trains agents" in info["tool_calls"][0].result
        _, _, terminated, _, info = env.step(call("get_current_time", timezone="Mars/Olympus_Mons"))
        assert info["tool_calls"][0].failed and "Mars/Olympus_Mons" in info["tool_calls"][0].result
        assert not terminated  # a server's error result is the model's to read
    finally:
        env.close()


def test_check_env_passes_an_environment_whose_tools_are_a_servers(servers):
    rg.check_env(
        ServerToolsEnv(mcp_servers=[servers[1]])
    )  # the Node server: ~0.2 s a reset, and check_env resets 12 times
