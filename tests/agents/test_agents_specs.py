"""The parts of sandboxed agents that need no container: the built-in specs' command lines and config (first prompt
and follow-up), the registry and its errors, the session gateway (one session only, the proxy's key added, streams
passed through) and the relay script that carries the agent's connections to it."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import uvicorn

import rollgym as rg
from rollgym.agents import AGENTS, AgentRun, AgentSpec, agent_spec, as_agent, register_agent
from rollgym.agents.gateway import SessionGateway
from rollgym.agents.sandboxed import FORWARD, SandboxedAgent, container_url
from rollgym.envs.sandbox import SandboxMount
from rollgym.envs.swe import load_bundled_tasks
from rollgym.errors import UsageError

RUN = {"workdir": "/testbed", "home": "/tmp/h", "base_url": "http://127.0.0.1:4010/sessions/s1/v1", "api_key": "k"}


def _spec(name: str, **options) -> AgentSpec:
    return agent_spec(name, executable=sys.executable, **options)  # any executable: only the command is built


def test_the_five_built_in_agents_and_how_each_continues_a_conversation():
    assert sorted(AGENTS) == ["aider", "claude-code", "codex", "mini-swe-agent", "opencode"]
    run = AgentRun(**RUN, task=load_bundled_tasks()[0])
    first = {name: _spec(name).command(run, "fix it") for name in AGENTS if name != "mini-swe-agent"}
    run.turn = 1
    again = {name: _spec(name).command(run, "more") for name in first}
    assert "--session-id" in first["claude-code"] and again["claude-code"][-2:] == ["--resume", run.conversation]
    assert "resume" not in first["codex"] and again["codex"][-3:] == ["resume", "--last", "more"]
    assert "-c" not in first["opencode"] and again["opencode"][-1] == "-c"
    assert "--no-restore-chat-history" in first["aider"] and "--restore-chat-history" in again["aider"]
    assert first["aider"][-1] == "inflection/__init__.py"  # the files the gold patch touches, in the chat
    with pytest.raises(ValueError, match="no continue option"):
        _spec("mini-swe-agent").command(run, "more")


def test_each_agent_is_pointed_at_its_session_and_kept_offline():
    run = AgentRun(**RUN)
    claude = _spec("claude-code").environment(run)
    assert claude["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4010/sessions/s1" and claude["DISABLE_TELEMETRY"] == "1"
    codex = _spec("codex").command(run, "x")
    assert any("base_url=" + json.dumps(run.base_url) in arg for arg in codex)
    assert "check_for_update_on_startup=false" in codex
    (config,) = _spec("opencode").files(run).values()
    assert json.loads(config)["provider"]["rollgym"]["options"]["baseURL"] == run.base_url
    assert _spec("opencode").environment(run)["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    (mini,) = _spec("mini-swe-agent").files(run).values()
    assert json.loads(mini)["model"]["model_kwargs"]["api_base"] == run.base_url
    aider = _spec("aider").command(run, "x")
    assert aider[aider.index("--openai-api-base") + 1] == run.base_url and "--no-check-update" in aider


def test_agents_by_name_spec_or_callable_and_their_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("ROLLGYM_CACHE", str(tmp_path))
    monkeypatch.delenv("ROLLGYM_CODEX", raising=False)
    with pytest.raises(UsageError, match=r"codex is not installed: \.ci/agents-up"):
        as_agent("codex")
    with pytest.raises(UsageError, match="no agent called 'nope': rollgym has aider, claude-code"):
        as_agent("nope")

    def mine(row, base_url, api_key):
        return ""

    assert as_agent(mine) is mine  # your own code runs as it is
    assert isinstance(as_agent(_spec("codex")), SandboxedAgent)
    with pytest.raises(UsageError, match=r"rollgym/Calculator-v0 \(CalculatorEnv\) offers none"):
        rg.run_agents(_spec("codex"), None, "smollm2-135m", out=tmp_path / "x", env="rollgym/Calculator-v0")

    @register_agent
    class Echo(AgentSpec):
        name, env_var, install, cache_path = "echo-test", "ROLLGYM_ECHO", "nothing", "-"

        def environment(self, run):
            return {}

        def command(self, run, prompt):
            return ["echo", prompt]

    try:
        assert isinstance(agent_spec("echo-test"), Echo)
    finally:
        AGENTS.pop("echo-test")


def test_a_mount_never_brings_the_docker_socket_in():
    for path in ("/var/run/docker.sock", "/var/run", "/run", "relative/path", "/a/../b"):
        with pytest.raises(ValueError):
            SandboxMount(source=path, target="/x")
    assert SandboxMount(source="/opt/x", target="/opt/x").read_only
    assert container_url("http://127.0.0.1:43211/sessions/a-b/v1") == "http://127.0.0.1:4010/sessions/a-b/v1"


async def _upstream(app):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return server, task, sock.getsockname()[1]


async def _echo(scope, receive, send):
    """An upstream that answers with what it got, in three streamed chunks."""
    headers = dict(scope["headers"])
    body = json.dumps({"path": scope["path"], "auth": headers.get(b"authorization", b"").decode()}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    for part in (b"data: 1\n\n", b"data: 2\n\n", body):
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def test_the_gateway_serves_one_session_adds_the_key_and_streams(tmp_path):
    async def main():
        server, task, port = await _upstream(_echo)
        path = str(tmp_path / "proxy.sock")
        try:
            async with SessionGateway(f"http://127.0.0.1:{port}/sessions/mine/v1", path, "the-proxy-key") as gateway:
                async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=path)) as client:
                    own = await client.post(
                        "http://x/sessions/mine/v1/chat/completions", headers={"authorization": "Bearer guessed"}
                    )
                    chunks = []
                    async with client.stream("GET", "http://x/sessions/mine/v1/models") as streamed:
                        async for chunk in streamed.aiter_raw():
                            chunks.append(chunk)
                    refused = [
                        (await client.get(f"http://x{p}")).status_code
                        for p in ("/sessions", "/sessions/other/v1/models", "/sessions/mine/v1/../../other/v1/x", "/")
                    ]
                return own, b"".join(chunks), refused, gateway.refused
        finally:
            server.should_exit = True
            await task

    own, streamed, refused, logged = asyncio.run(main())
    assert own.status_code == 200 and own.text.startswith("data: 1\n\ndata: 2\n\n")
    got = json.loads(own.text.split("\n\n")[-1])
    assert got == {"path": "/sessions/mine/v1/chat/completions", "auth": "Bearer the-proxy-key"}  # the key is ours
    assert streamed.startswith(b"data: 1\n\n") and refused == [403, 403, 403, 403] and len(logged) == 4


def test_the_relay_carries_the_agents_connections_to_the_socket_and_returns_its_status(tmp_path):
    """forward.py as the sandbox runs it: it listens on loopback, starts the command, relays its requests to the
    gateway's socket, and exits with the command's status."""

    async def main():
        server, task, port = await _upstream(_echo)
        path = str(tmp_path / "proxy.sock")
        listen = socket.socket()
        listen.bind(("127.0.0.1", 0))
        relay_port = listen.getsockname()[1]
        listen.close()
        client = (
            "import urllib.request, sys; "
            f"r = urllib.request.urlopen('http://127.0.0.1:{relay_port}/sessions/mine/v1/models', timeout=30); "
            "print(r.read().decode()); sys.exit(7)"
        )
        try:
            async with SessionGateway(f"http://127.0.0.1:{port}/sessions/mine/v1", path):
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-I",
                    "-S",
                    str(FORWARD),
                    path,
                    str(relay_port),
                    "--",
                    sys.executable,
                    "-c",
                    client,
                    stdout=subprocess.PIPE,
                )
                out, _ = await proc.communicate()
                return proc.returncode, out.decode()
        finally:
            server.should_exit = True
            await task

    code, out = asyncio.run(main())
    assert code == 7 and '"path": "/sessions/mine/v1/models"' in out
    assert Path(FORWARD).read_text().count("import ") < 10  # standard library only: it runs on any mounted Python


def test_sandboxes_on_another_machine_are_refused_with_the_way_to_get_there():
    from rollgym.agents.sandboxed import check_local_hosts

    for address in ("unix:///var/run/docker.sock", "ssh://root@127.0.0.1", "tcp://localhost:2375", None):
        check_local_hosts(address)
    with pytest.raises(UsageError, match="not on ssh://gpu-node-7: for several machines run one Ray actor per machine"):
        check_local_hosts(["unix:///var/run/docker.sock", "ssh://gpu-node-7"])


def test_a_system_python_is_refused_as_the_agents_runtime_with_why():
    from rollgym.agents.spec import own_python

    assert own_python("/root/.pyenv/versions/3.11.7", "x") == "/root/.pyenv/versions/3.11.7"
    for prefix in ("/usr", "/usr/local", "/"):
        with pytest.raises(
            UsageError, match=r"^mini's venv runs on /usr; agents in sandboxes need a Python of its own"
        ):
            own_python(prefix, "mini's venv runs on /usr")
