"""Agents run inside their task's sandbox, reaching only their own proxy session (issue 28), with the real SmolLM2
behind a real recording proxy, real Docker sandboxes and the bundled SWE tasks.

- An agent the tests define (a Python script, as a user adds one) solves a task through `rg.run_agents`: its call is
  recorded token-exact, its diff is read in its sandbox and graded in a fresh container.
- A hostile agent tries every way out: the host's files (write, read), the host's ports and the proxy's own, the Docker
  socket, other sessions through its gateway, the read-only runtime, a fork bomb. Every attempt fails inside the
  container, and the host is unchanged: its files, its listening sockets, no process left behind.
- Memory past the sandbox's limit and sleeping past the agent's timeout end the rollout with the right category."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from support.agent import HOSTILE, SOLVER, ScriptAgent

import rollgym as rg
from rollgym.agents import SandboxedAgent
from rollgym.agents.sandboxed import python_runtime
from rollgym.envs.swe import load_bundled_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _listening() -> set[tuple[str, int]]:
    """The host's listening TCP sockets held by this test process or a process it started (other tests run beside
    it, in other processes, and open their own)."""
    from support.loopback import _ancestors, listeners, owners

    found = listeners()
    held = owners({item.inode for item in found})
    mine = {inode for inode, pid in held.items() if pid == os.getpid() or os.getpid() in _ancestors(pid)}
    return {(item.host, item.port) for item in found if item.inode in mine}


def _processes(marker: str) -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline:
                out.append(cmdline)
    return out


@pytest.fixture(scope="module")
def smollm(tool_tok):
    from rollgym.engines.transformers_engine import TransformersEngine

    return rg.Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)


def test_an_agent_the_tests_define_solves_a_task_in_its_sandbox(smollm, tmp_path, docker_engine):
    row = load_bundled_tasks()[0].model_dump(mode="json")
    summary = rg.run_agents(ScriptAgent(SOLVER, timeout_s=300), [row], smollm, out=tmp_path / "run", concurrency=1)
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert summary.rollouts == 1 and rollout.error is None, rollout.error
    assert rollout.token_exact and len(rollout.turns) == 1 and rollout.reward == 1.0, rollout.reward_components
    assert rollout.reward_components["infra_failure"] == 0.0


@pytest.mark.loopback_probe  # a host port on every address, on purpose: the agent must not reach it
def test_a_hostile_agent_gets_nowhere_and_the_host_is_unchanged(smollm, tmp_path, docker_engine, capsys):
    marker = f"rollgym-hostile-{uuid.uuid4().hex[:8]}"
    home_canary, cwd_canary = Path.home() / f"{marker}.txt", Path.cwd() / f"{marker}.txt"
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{marker} host secret")
    before = _listening()  # (the two canary ports below are closed again before the check)
    everywhere = socket.socket()  # a host port on every address, and one on loopback only
    everywhere.bind(("0.0.0.0", 0))
    everywhere.listen()
    loopback = socket.socket()
    loopback.bind(("127.0.0.1", 0))
    loopback.listen()
    host_ip = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    ports = [f"127.0.0.1:{loopback.getsockname()[1]}", f"127.0.0.1:{everywhere.getsockname()[1]}"]
    ports += [f"{ip}:{everywhere.getsockname()[1]}" for ip in host_ip[:2]] + ["172.17.0.1:2375"]
    env = {
        "HOST_WRITE_PATHS": f"{home_canary}:{cwd_canary}",
        "HOST_SECRET": str(secret),
        "RUNTIME_DIR": python_runtime(),
        "FORKS": "200",
    }
    spec = ScriptAgent(HOSTILE + f"\n# {marker}\n", timeout_s=300)
    spec.environment = lambda run, _base=spec.environment: {
        **_base(run),
        **env,
        "HOST_PORTS": ",".join(ports + [proxy_port[0]]),
    }
    agent = SandboxedAgent(spec, sandbox={"pids_limit": 64})
    proxy_port: list[str] = []

    async def run():
        from rollgym.proxy import RecordingProxy

        async with RecordingProxy(smollm, api_key="host-only-key") as proxy:
            proxy_port.append(f"127.0.0.1:{proxy.port}")
            sess = proxy.session("hostile")
            out = await agent(load_bundled_tasks()[0].model_dump(mode="json"), sess.base_url, proxy.api_key)
            return out, sess

    try:
        out, sess = asyncio.run(run())
    finally:
        everywhere.close()
        loopback.close()
    results = {
        r["name"]: r for r in map(json.loads, (line for line in out.outputs[0].splitlines() if line.startswith("{")))
    }
    assert results["model"]["ok"] and results["own session"]["ok"], results  # its own session answers
    assert len(sess.calls) == 2 and not sess.errors
    # writing the host's home or working directory fails or lands in the container: the host's stay untouched
    assert not home_canary.exists() and not cwd_canary.exists()
    blocked = ["read host secret", "write runtime", "docker socket", "list sessions", "other session", "escape by dots"]
    blocked += [n for n in results if n.startswith("connect ")]
    assert all(not results[n]["ok"] for n in blocked), {n: results[n] for n in blocked if results[n]["ok"]}
    assert "HTTP 403" in results["other session"]["error"] and "HTTP 403" in results["list sessions"]["error"]
    assert (
        "Read-only file system" in results["write runtime"]["error"] or "Errno 30" in results["write runtime"]["error"]
    )
    assert not results["fork bomb"]["ok"] and "Resource temporarily unavailable" in results["fork bomb"]["error"]
    assert _listening() == before  # nothing new listens on the host, and the proxy is gone
    assert not _processes(marker)  # nothing the agent started outlives its sandbox
    assert not out.diff.strip() or marker not in out.diff
    with capsys.disabled():
        print("\nhostile agent, in its sandbox:")
        for name, r in results.items():
            print(f"  {name:<34} {'ok: ' + r['got'] if r['ok'] else 'failed: ' + r['error']}"[:150])


@pytest.mark.parametrize(
    "script, sandbox, timeout_s, category",
    [
        ("x = bytearray(512 * 2**20)\nx[::4096] = b'1' * len(x[::4096])\n", {"mem_limit": "128m"}, 300, "agent"),
        ("import time\ntime.sleep(600)\n", {}, 5, "timeout"),
    ],
    ids=["memory-past-the-limit", "sleep-past-the-timeout"],
)
def test_an_agent_past_its_limits_is_recorded_and_the_batch_goes_on(
    smollm, tmp_path, docker_engine, script, sandbox, timeout_s, category
):
    rows = [load_bundled_tasks()[0].model_dump(mode="json")]
    rg.run_agents(
        ScriptAgent("ask('hello', 2)\n" + script, timeout_s=timeout_s),
        rows,
        smollm,
        out=tmp_path / "run",
        sandbox=sandbox,
        concurrency=1,
    )
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert rollout.error is not None and rollout.error.category == category, rollout.error
    assert rollout.turns and rollout.token_exact  # what it sampled before it died is kept
    assert not _processes("time.sleep(600)")


def test_the_mounted_runtime_and_socket_are_all_the_sandbox_sees_of_the_host():
    spec = ScriptAgent("pass\n")
    with tempfile.TemporaryDirectory() as run_dir:
        mounts = SandboxedAgent(spec).mounts(run_dir)
        assert {m.target for m in mounts} == {python_runtime(), "/opt/rollgym-agent", "/run/rollgym-proxy"}
        assert all(m.read_only for m in mounts)
        if python_runtime().startswith("/root/"):  # an unprivileged user gets traversable folders down to it
            skeleton = SandboxedAgent(spec).mounts(run_dir, user="1000:1000")[0]
            assert skeleton.target == "/root" and not [p for p in Path(skeleton.source).rglob("*") if p.is_file()]
    assert os.path.isfile(f"{python_runtime()}/bin/python3.11") or list(Path(python_runtime(), "bin").glob("python3*"))


def test_a_binary_or_oversized_change_made_in_the_sandbox_is_refused_as_patch_failed(smollm, tmp_path, docker_engine):
    binary = "ask('hello', 2)\nopen('blob.bin', 'wb').write(bytes(range(256)) * 4)\n"
    oversized = "ask('hello', 2)\nopen('big.txt', 'w').write('x' * (3 * 2**20))\n"
    rows = [load_bundled_tasks()[0].model_dump(mode="json")]
    for name, script in (("binary", binary), ("oversized", oversized)):
        rg.run_agents(ScriptAgent(script, timeout_s=300), rows, smollm, out=tmp_path / name)
        (rollout,) = rg.read_rollouts(tmp_path / name / "rollouts.jsonl")
        assert rollout.error is None and rollout.reward == 0.0, (name, rollout.error)
        assert rollout.reward_components["patch_applied"] == 0.0 and rollout.reward_components["infra_failure"] == 0.0


def test_any_program_that_speaks_the_openai_api_runs_in_the_sandbox(smollm, tmp_path, docker_engine):
    """`rg.CommandAgent(argv)`: the program in the task's sandbox, its session's endpoint in OPENAI_BASE_URL and
    OPENAI_API_KEY, the row as JSON on stdin; a program that fails is the rollout's `agent` error."""
    from support.agent import PYTHON

    script = (
        "import json, os, sys, urllib.request; row = json.load(sys.stdin); "
        "body = {'model': 'm', 'messages': [{'role': 'user', 'content': row['problem_statement'][:200]}], 'max_tokens': 4}; "
        "req = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', json.dumps(body).encode(), "
        "{'content-type': 'application/json', 'authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']}); "
        "print(json.load(urllib.request.urlopen(req))['choices'][0]['message']['content'])"
    )
    rows = [load_bundled_tasks()[0].model_dump(mode="json")]
    rg.run_agents(rg.CommandAgent([PYTHON, "-I", "-c", script]), rows, smollm, out=tmp_path / "ok")
    (rollout,) = rg.read_rollouts(tmp_path / "ok" / "rollouts.jsonl")
    assert rollout.error is None and len(rollout.turns) == 1 and rollout.token_exact
    assert rollout.reward == 0.0 and rollout.reward_components["infra_failure"] == 0.0  # graded: nothing fixed
    rg.run_agents(rg.CommandAgent([PYTHON, "-I", "-c", "import sys; sys.exit(3)"]), rows, smollm, out=tmp_path / "bad")
    (failed,) = rg.read_rollouts(tmp_path / "bad" / "rollouts.jsonl")
    assert failed.error is not None and failed.error.category == "agent" and "exited with 3" in failed.error.message
