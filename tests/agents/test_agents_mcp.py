"""An environment's MCP servers reach the built-in agents through each agent's own MCP configuration: the exact
config each CLI gets (the shapes `claude mcp add`, `codex mcp add` and opencode's config schema define), the refusal
of agents without an MCP client, and Claude Code, Codex and opencode, the real CLIs, each calling the Harbor fixture
task `use-mcp-tool`'s server inside the task's sandbox on a scripted model's word, recorded through the proxy and
graded by the verifier."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import docker
import pytest

import rollgym as rg
from rollgym.agents import AgentRun, agent_spec
from rollgym.agents.builtin.claude_code import ClaudeCode
from rollgym.agents.builtin.codex import Codex
from rollgym.agents.builtin.opencode import OpenCode
from rollgym.agents.mcp_config import AgentWithoutMCPError, servers_for_agent
from rollgym.envs.mcp import MCPServerConfig
from rollgym.errors import UsageError

TASKS = Path(__file__).parents[1] / "fixtures" / "harbor"
STDIO = MCPServerConfig(
    name="plain", command="python3", args=["-u", "/opt/mcp/plain server.py"], env={"K": 'v "q"'}, cwd="/app"
)
HTTP = MCPServerConfig(name="web", url="http://mcp.internal:8000/mcp", headers={"X-Key": "k"}, call_timeout_s=30)
SERVERS = (STDIO, HTTP)


def _run(servers=SERVERS) -> AgentRun:
    return AgentRun(
        workdir="/app", home="/h", base_url="http://127.0.0.1:4010/sessions/s/v1", api_key="x", mcp_servers=servers
    )


def test_claude_code_gets_an_mcp_config_file_with_its_servers():
    spec = ClaudeCode(executable="/bin/true")
    run = _run()
    assert json.loads(spec.files(run)["/h/mcp.json"]) == {
        "mcpServers": {
            "plain": {  # no working directory in its config: a `cd` through sh
                "type": "stdio",
                "command": "sh",
                "args": ["-c", 'cd "$0" && exec "$@"', "/app", "python3", "-u", "/opt/mcp/plain server.py"],
                "env": {"K": 'v "q"'},
                "timeout": 60000,
                "alwaysLoad": True,
            },
            "web": {
                "type": "http",
                "url": "http://mcp.internal:8000/mcp",
                "headers": {"X-Key": "k"},
                "timeout": 30000,
                "alwaysLoad": True,
            },
        }
    }
    command = spec.command(run, "hi")
    at = command.index("--mcp-config")
    assert command[at : at + 3] == ["--mcp-config", "/h/mcp.json", "--strict-mcp-config"]
    assert spec.environment(run)["MCP_TIMEOUT"] == "60000"
    plain = _run(())  # no servers: nothing about MCP
    assert spec.files(plain) == {} and "--mcp-config" not in spec.command(plain, "hi")
    assert "MCP_TIMEOUT" not in spec.environment(plain)


def test_codex_gets_mcp_server_tables_in_its_config_toml():
    spec = Codex(executable="/bin/true")
    files = spec.files(_run())
    assert tomllib.loads(files["/h/codex/config.toml"]) == {
        "mcp_servers": {
            "plain": {
                "command": "python3",
                "args": ["-u", "/opt/mcp/plain server.py"],
                "env": {"K": 'v "q"'},
                "cwd": "/app",
                "startup_timeout_sec": 60.0,
                "tool_timeout_sec": 60.0,
            },
            "web": {
                "url": "http://mcp.internal:8000/mcp",
                "http_headers": {"X-Key": "k"},
                "startup_timeout_sec": 60.0,
                "tool_timeout_sec": 30.0,
            },
        }
    }
    assert "/h/codex/config.toml" not in spec.files(_run(()))


def test_opencode_gets_mcp_entries_in_its_config():
    spec = OpenCode(executable="/bin/true")
    config = json.loads(spec.files(_run())["/h/opencode.json"])
    assert config["mcp"] == {
        "plain": {
            "type": "local",
            "command": ["python3", "-u", "/opt/mcp/plain server.py"],
            "environment": {"K": 'v "q"'},
            "cwd": "/app",
            "enabled": True,
            "timeout": 60000,
        },
        "web": {
            "type": "remote",
            "url": "http://mcp.internal:8000/mcp",
            "oauth": False,
            "headers": {"X-Key": "k"},
            "enabled": True,
            "timeout": 30000,
        },
    }
    assert "mcp" not in json.loads(spec.files(_run(()))["/h/opencode.json"])


@pytest.mark.parametrize("name", ["mini-swe-agent", "aider"])
def test_agents_without_an_mcp_client_are_refused_naming_the_agent_and_the_servers(name):
    spec = agent_spec(name)
    with pytest.raises(AgentWithoutMCPError, match=rf"{name} has no MCP client, and use-mcp-tool declares .*plain"):
        servers_for_agent(spec, (STDIO,), "use-mcp-tool")
    assert servers_for_agent(spec, (), "no-servers") == ()  # a task without servers runs as before


def test_a_host_server_is_refused_for_an_agent_in_the_sandbox():
    on_host = MCPServerConfig(name="local", command="python3", host=True)
    with pytest.raises(UsageError, match="'?local'?.*host=True.*cannot reach"):
        servers_for_agent(ClaudeCode(executable="/bin/true"), (on_host,), "t")


#: per agent: its name of the server's `where` tool, its shell tool, and that tool's arguments for a command
AGENT_TOOLS = {
    "claude-code": ("mcp__plain__where", "Bash", lambda cmd: {"command": cmd}),
    "codex": ("mcp__plain__where", "exec_command", lambda cmd: {"cmd": cmd}),  # a Responses namespace `mcp__plain`
    "opencode": ("plain_where", "bash", lambda cmd: {"command": cmd, "description": "write it"}),
}


def _where_then_write(tool_tok, say, agent: str):
    """A scripted model: call the server's `where` tool, then write the hostname it reported with the agent's shell
    tool, then stop."""
    where, shell, arguments = AGENT_TOOLS[agent]

    def policy(prompt, sampling):
        text = tool_tok.decode(list(prompt))
        turn = text.count("<|im_start|>assistant") - 1
        if turn == 0:
            return say.call(where)
        if turn == 1:
            host = re.search(r'hostname\\*": \\*"([^"\\]+)', text)
            return say.call(shell, **arguments(f"echo {host.group(1) if host else 'not-seen'} > /app/host.txt"))
        return say.text("Done.")

    return policy


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("agent", list(AGENT_TOOLS))
def test_the_agent_calls_the_tasks_mcp_server_inside_its_sandbox(agent, base_image, tool_tok, say, tmp_path):
    """The real CLI on `use-mcp-tool` behind rollgym's proxy: the model's call of the server's `where` tool is
    answered by the server running in the task's container (its hostname), the recorded trajectory holds the call and
    its result, and Harbor's verifier gives 1 because the hostname the server reported is the container's."""
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.proxy import ProxySettings

    try:
        agent_spec(agent).executable()
    except UsageError as exc:
        print(f"{exc}; skipping the real run")
        pytest.skip(str(exc))
    docker.from_env().images.get(base_image).tag("rollgym/base", "latest")  # what the fixture's Dockerfile is FROM
    (row,) = rg.load_tasks("rollgym/Harbor-v0", str(TASKS / "use-mcp-tool"))
    policy = rg.Policy(engine=ScriptedEngine(_where_then_write(tool_tok, say, agent)), tokenizer=tool_tok)
    summary = rg.run_agents(
        agent,
        [row],
        policy,
        out=tmp_path / "run",
        env="rollgym/Harbor-v0",
        agent_options={"timeout_s": 300, "max_output_tokens": 200},
        settings=ProxySettings(default_max_tokens=200),
    )
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert summary.rollouts == 1 and rollout.error is None, rollout.error
    where, shell, _ = AGENT_TOOLS[agent]
    offered = [t.get("function", t).get("name") for t in rollout.tools]
    assert where in offered, offered  # the server's tool, listed by the agent from the sandbox
    calls = [c["function"]["name"] for turn in rollout.turns for c in turn.message.get("tool_calls") or []]
    assert calls == [where, shell], calls
    answer = json.dumps(rollout.turns[0].env_messages)  # what the server answered, as the agent sent it on
    assert re.search(r'in_container\\*": true', answer), answer  # the server ran in a container: the sandbox
    assert rollout.reward == 1.0 and rollout.token_exact, (rollout.reward, rollout.agent_output)
