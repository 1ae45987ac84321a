"""The five built-in agents, each the real CLI (`.ci/agents-up` installs them), run inside a bundled SWE task's sandbox
against the real SmolLM2 behind a recording proxy (greedy, so replies end where they end).

- Claude Code (Anthropic Messages), Codex (OpenAI Responses), opencode (Chat Completions, streaming) continue their
  conversation with a follow-up through their own continue option; Aider through its chat history: each session
  holds the calls of one conversation, each extending the previous prompt + completion exactly, token-exact, and
  the recorded messages equal what the CLI sent (bodies captured in front of the proxy's app).
- Each agent through `rg.agent_rollout_func(NAME)`: the rollout is the session's main segment, token-exact, and its
  reward is the SWE grader's verdict on the diff read in the sandbox.
- `rollgym generate --agent` runs one over a batch to disk.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from session_checks import BodyCapture, check_session, recorded_texts
from support.proxy import SpyEngine

import rollgym as rg
from rollgym.agents import AGENTS, SandboxedAgent, agent_spec
from rollgym.envs.swe import load_bundled_tasks
from rollgym.errors import UsageError

pytestmark = [pytest.mark.docker, pytest.mark.slow]
API_KEY = "k3y-agents"
FEW_WORDS = "You are a helpful assistant. Answer in a few words."


def _installed_or_skip(name: str, **options):
    spec = agent_spec(name, **options)
    try:
        spec.executable()
    except UsageError as exc:
        reason = f"{exc}; skipping the real run"
        print(reason)
        pytest.skip(reason)
    return spec


@pytest.fixture(scope="module")
def agent_proxy(tool_tok):
    """The real SmolLM2 behind a recording proxy with an API key, sampling greedily, its request bodies captured."""
    from rollgym.engines.transformers_engine import TransformersEngine
    from rollgym.proxy import ProxySettings, RecordingProxy

    spy = SpyEngine(TransformersEngine("smollm2-135m"))
    proxy = RecordingProxy(
        rg.Policy(engine=spy, tokenizer=tool_tok),
        settings=ProxySettings(default_max_tokens=200, temperature=0.0, api_key=API_KEY),
    )
    capture = BodyCapture(proxy.app)
    proxy.app = capture
    with proxy.in_thread():
        yield proxy, spy, capture


def _converse(agent_proxy, spec, prompts, session_id, route):
    """`spec` in a bundled task's sandbox, asked `prompts` in one conversation; its session checked exactly."""
    proxy, spy, capture = agent_proxy
    spec.prompts = lambda problem: list(prompts)
    sess = proxy.session(session_id)
    start, captured_from = len(spy.prompts), len(capture.bodies)
    row = load_bundled_tasks()[0].model_dump(mode="json")
    out = asyncio.run(SandboxedAgent(spec)(row, sess.base_url, proxy.api_key))
    check_session(sess, spy, capture, start, captured_from, route)
    return sess, out.outputs


FOLLOW_UP = ["Say hello.", "Now say goodbye."]


def test_claude_code_follow_up_continues_its_session_token_exact(agent_proxy, docker_engine):
    spec = _installed_or_skip("claude-code", max_output_tokens=200, system_prompt=FEW_WORDS, timeout_s=600)
    sess, outputs = _converse(agent_proxy, spec, FOLLOW_UP, "claude-code", "/messages")
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert [r["is_error"] for r in results] == [False, False] and results[0]["session_id"] == results[1]["session_id"]
    assert results[1]["result"] == sess.calls[-1].reply["content"].strip()  # what the CLI printed is what was sampled


def test_codex_resume_continues_its_session_token_exact(agent_proxy, docker_engine):
    spec = _installed_or_skip("codex", system_prompt=FEW_WORDS, timeout_s=600)
    sess, outputs = _converse(agent_proxy, spec, FOLLOW_UP, "codex", "/responses")
    events = [json.loads(line) for line in outputs[1].splitlines() if line.startswith("{")]
    said = [
        e["item"]["text"] for e in events if e.get("type") == "item.completed" and e["item"]["type"] == "agent_message"
    ]
    assert said and said[-1].strip() == (sess.calls[-1].reply["content"] or "").strip()


def test_opencode_continue_extends_its_session_token_exact(agent_proxy, docker_engine):
    spec = _installed_or_skip("opencode", max_output_tokens=64, system_prompt=FEW_WORDS, timeout_s=600)
    sess, _ = _converse(agent_proxy, spec, FOLLOW_UP, "opencode", "/chat/completions")
    tools = [t["function"]["name"] for t in sess.rollouts()[-1].tools]
    assert tools == ["bash"]  # the small build agent


def test_mini_swe_agent_steps_continue_its_session_token_exact(agent_proxy, docker_engine):
    options = {"step_limit": 2, "textbased": True, "short_prompts": True, "max_output_tokens": 96, "timeout_s": 600}
    spec = _installed_or_skip(
        "mini-swe-agent", system_prompt="You are a helpful assistant that runs shell commands.", **options
    )
    task = "Run this command:\n```bash\necho hello\n```\nReply with the command in a bash code block."
    sess, _ = _converse(agent_proxy, spec, [task], "mini-swe-agent", "/chat/completions")
    assert [s.reason for s in sess.segments] == ["first call"]
    observation = sess.calls[1].request_messages[-1]["content"]
    assert "hello" in observation  # mini ran the model's command, in its sandbox, and sent its output back


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_agent_rollout_func_runs_the_cli_in_the_tasks_sandbox_and_grades_its_diff(name, tool_tok, docker_engine):
    """Each built-in agent by name through TRL's `rollout_func` slot: in the bundled task's sandbox, through its own
    proxy session; the rollout is the session's main segment, token-exact; its reward is the grader's verdict."""
    from rollgym.engines.transformers_engine import TransformersEngine
    from rollgym.proxy import ProxySettings

    _installed_or_skip(name)
    options = {"max_output_tokens": 96, "timeout_s": 600, **({"step_limit": 2} if name == "mini-swe-agent" else {})}
    policy = rg.Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)
    func = rg.agent_rollout_func(
        name,
        policy=policy,
        concurrency=1,
        agent_options=options,
        settings=ProxySettings(default_max_tokens=96, temperature=0.0),
    )
    row = load_bundled_tasks()[0].model_dump(mode="json")
    cols = func([json.dumps(row)], None)
    (rollout,), (sess,) = func.last_rollouts, func.last_sessions
    assert rollout.token_exact and sess.calls and not sess.errors, rollout.error
    if rollout.error is not None:
        # Claude Code's system prompt carries today's date, so SmolLM2's greedy reply changes by the day; on some days
        # it runs past the budget, which Claude Code refuses (exit 1). That is the agent's failure, recorded as such.
        assert name == "claude-code" and rollout.error.category == "agent", rollout.error
        assert "output token maximum" in rollout.error.message and rollout.reward == 0.0
        return
    assert rollout.reward_components["infra_failure"] == 0.0
    assert cols["reward"] == [rollout.reward_components["resolved"]]
    text = "\n".join(recorded_texts(sess.calls[0].request_messages))
    assert row["problem_statement"].split("\n")[0] in text  # the CLI was given the task
    assert cols["completion_ids"][0] == rollout.token_view()["completion_ids"]


def test_aider_edits_in_its_sandbox_and_its_diff_is_graded(tool_tok, docker_engine):
    """A scripted model answering in Aider's `whole` format with the fixed file: Aider, in the task's sandbox, writes
    it; the diff read there resolves the task."""
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.swe import checkout_task
    from rollgym.proxy import ProxySettings, RecordingProxy

    spec = _installed_or_skip("aider", timeout_s=300)
    task = load_bundled_tasks()[0]
    fixed = checkout_task(
        task, Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True).stdout.strip()) / "x"
    )
    subprocess.run(["patch", "-p1"], cwd=fixed, input=task.patch.encode(), check=True, capture_output=True)
    source = (fixed / "inflection" / "__init__.py").read_text()
    reply = tool_tok.encode(f"inflection/__init__.py\n```python\n{source}```\n") + [tool_tok.end_of_turn_id]
    proxy = RecordingProxy(
        rg.Policy(engine=ScriptedEngine(lambda prompt, sampling: reply), tokenizer=tool_tok),
        settings=ProxySettings(default_max_tokens=len(reply) + 8),
    )
    with proxy.in_thread():
        sess = proxy.session()
        out = asyncio.run(SandboxedAgent(spec)(task.model_dump(mode="json"), sess.base_url, None))
    assert sess.calls[0].finish_reason == "stop" and sess.calls[0].completion_ids == reply and not sess.errors
    assert "+    if number % 100 in (11, 12, 13):" in out.diff and ".aider" not in out.diff
    reward, components = rg.swe_reward(task.model_dump(mode="json"), out)
    assert reward == 1.0 and components["resolved"] == 1.0


def test_rollgym_generate_agent_runs_a_batch_to_disk(tmp_path, docker_engine):
    _installed_or_skip("mini-swe-agent")
    rollgym = str(Path(sys.executable).parent / "rollgym")
    args = ["generate", "--agent", "mini-swe-agent", "--agent-option", "step_limit=1", "--tasks", "bundled"]
    args += ["--num-tasks", "1", "--n", "1", "--max-tokens", "32", "--out", str(tmp_path / "run")]
    proc = subprocess.run([rollgym, *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert rollout.turns and rollout.token_exact and (rollout.error is None or rollout.error.category == "agent")
    assert (tmp_path / "run" / "summary.json").is_file()


def test_claude_code_and_codex_in_sandboxes_through_the_rollgym_proxy_command(docker_engine):
    """`rollgym proxy` as a user starts it (a process; greedy), Claude Code then Codex in a task's sandbox on their own
    sessions, each with a follow-up; the sessions, read over HTTP, chain their calls exactly."""
    import os
    import re
    import time

    import httpx

    claude = _installed_or_skip("claude-code", max_output_tokens=200, system_prompt="Answer in a few words.")
    codex = _installed_or_skip("codex", system_prompt="Answer in a few words.")
    rollgym = str(Path(sys.executable).parent / "rollgym")
    proc = subprocess.Popen(
        [rollgym, "proxy", "--port", "0", "--api-key", API_KEY, "--temperature", "0", "--max-tokens", "200"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    row = load_bundled_tasks()[0].model_dump(mode="json")
    try:
        lines, match = [], None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not match:
            line = proc.stdout.readline() if proc.stdout else ""
            lines.append(line)
            match = re.search(r"new sessions: POST (\S+)/sessions", line)
            assert line or proc.poll() is None, "".join(lines)
        assert match, "".join(lines)
        root, auth = match.group(1), {"authorization": f"Bearer {API_KEY}"}
        for sid, spec in (("cc", claude), ("cx", codex)):
            spec.prompts = lambda problem: list(FOLLOW_UP)
            base_url = httpx.post(f"{root}/sessions", json={"session_id": sid}, headers=auth).json()["base_url"]
            asyncio.run(SandboxedAgent(spec)(row, base_url, API_KEY))
            session = httpx.get(f"{root}/sessions/{sid}", headers=auth).json()
            calls = session["calls"]
            assert len(calls) == 2 and not session["errors"] and [s["calls"] for s in session["segments"]] == [[0, 1]]
            assert calls[1]["reused_len"] == calls[0]["prompt_len"] + len(calls[0]["completion_ids"])
            assert calls[1]["prompt_len"] == calls[1]["reused_len"] + len(calls[1]["bridge_ids"])
            (rollout,) = httpx.get(f"{root}/sessions/{sid}/rollouts", headers=auth).json()
            assert rollout["token_exact"] and [len(t["completion_ids"]) for t in rollout["turns"]] == [
                len(c["completion_ids"]) for c in calls
            ]
    finally:
        proc.terminate()
        rest = proc.communicate(timeout=60)[0] or ""
    log = "".join(lines) + rest  # the access log: one line per request, all through the sandboxes' gateways
    assert "POST /sessions/cc/v1/messages 200" in log and "POST /sessions/cx/v1/responses 200" in log


@pytest.mark.loopback_probe  # a host port on every address, on purpose: the agent must not reach it
def test_a_real_cli_steered_by_the_policy_to_escape_gets_nowhere(tool_tok, tmp_path, docker_engine):
    """mini-swe-agent, the real CLI, runs what the (scripted) policy samples, in its sandbox: read a host file, write
    into the host's home, connect to a host port and to the proxy's own, list the Docker socket, ask the gateway for
    another session. Its observations, sent back through the proxy, show each fail; the host is unchanged."""
    import socket
    import uuid

    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.proxy import ProxySettings, RecordingProxy

    spec = _installed_or_skip("mini-swe-agent", step_limit=2, textbased=True, short_prompts=True, timeout_s=300)
    marker = f"rollgym-steered-{uuid.uuid4().hex[:8]}"
    secret, canary = tmp_path / "secret.txt", Path.home() / f"{marker}.txt"
    secret.write_text(f"SECRET {uuid.uuid4().hex}")
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    port = listener.getsockname()[1]
    calls: list[int] = []

    def policy(prompt, sampling):
        calls.append(1)
        if len(calls) == 1:
            command = (
                f"cat {secret}; echo {marker} > {canary}; ls -l /var/run/docker.sock; "
                f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" 2>&1 | tail -1; "
                f"python3 -c \"import socket; socket.create_connection(('{proxy_port[0]}'.split(':')[0], "
                f"int('{proxy_port[0]}'.split(':')[1])), 3)\" 2>&1 | tail -1; "
                "python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:4010/sessions/other/v1/models')\""
                " 2>&1 | tail -1"
            )
            text = f"```bash\n{command}\n```"
        else:
            text = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
        return tool_tok.encode(text) + [tool_tok.end_of_turn_id]

    proxy_port: list[str] = []
    proxy = RecordingProxy(
        rg.Policy(engine=ScriptedEngine(policy), tokenizer=tool_tok), settings=ProxySettings(default_max_tokens=400)
    )
    try:
        with proxy.in_thread():
            proxy_port.append(f"127.0.0.1:{proxy.port}")
            sess = proxy.session()
            row = load_bundled_tasks()[0].model_dump(mode="json")
            asyncio.run(SandboxedAgent(spec)(row, sess.base_url, None))
    finally:
        listener.close()
    assert len(sess.calls) >= 2 and not sess.errors
    observation = sess.calls[1].request_messages[-1]["content"]
    assert "SECRET" not in observation and not canary.exists(), observation  # the host's file unread, home untouched
    assert "No such file" in observation and "docker.sock" in observation, observation
    assert observation.count("ConnectionRefusedError") >= 2, observation  # the host port and the proxy's, both closed
    assert "HTTP Error 403" in observation, observation  # another session, refused by its gateway
