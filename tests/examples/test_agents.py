"""The real agent CLIs (examples/agents) through the recording proxy with the real SmolLM2.

Claude Code (Anthropic Messages), Codex (OpenAI Responses), opencode (Chat Completions, streaming) and
mini-swe-agent (Chat Completions) each run one short task, with small output limits. Each session must hold
two calls of one conversation, every call extending the previous prompt + completion exactly (ids the model
saw and sampled, plus bridge ids), rollouts token-exact, and the recorded messages equal to what the CLI sent
(the request bodies as they arrived, captured in front of the proxy's app). `.ci/agents-up` installs the CLIs.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
from pathlib import Path

import pytest
from proxy_support import SpyEngine

from rollgym.rollouts.core.policy import Policy

AGENTS = Path(__file__).resolve().parents[2] / "examples" / "agents"
ROUTES = ("/chat/completions", "/messages", "/responses")
API_KEY = "k3y-agents"


def _example(module: str):
    if str(AGENTS) not in sys.path:
        sys.path.insert(0, str(AGENTS))
    return importlib.import_module(module)


class BodyCapture:
    """An ASGI middleware in front of the proxy's app: the JSON body of every model request, as it arrived."""

    def __init__(self, app) -> None:
        self.app, self.bodies = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith(ROUTES):
            return await self.app(scope, receive, send)
        chunks, messages = [], []
        while True:
            message = await receive()
            messages.append(message)
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        self.bodies.append((scope["path"], json.loads(b"".join(chunks) or b"{}")))
        replay = iter(messages)

        async def receive_again():  # the body again, then the real channel (a streaming reply waits on it)
            return next(replay, None) or await receive()

        return await self.app(scope, receive_again, send)


@pytest.fixture(scope="module")
def agent_proxy(tool_tok):
    """The real SmolLM2 behind a recording proxy with an API key, sampling greedily (the proxy's temperature override:
    replies end where they end on every run), its request bodies captured."""
    from rollgym.engines.transformers_engine import TransformersEngine
    from rollgym.rollouts.proxy import ProxySettings, RecordingProxy

    spy = SpyEngine(TransformersEngine("smollm2-135m"))
    proxy = RecordingProxy(
        Policy(engine=spy, tokenizer=tool_tok),
        settings=ProxySettings(default_max_tokens=200, temperature=0.0, api_key=API_KEY),
    )
    capture = BodyCapture(proxy.app)
    proxy.app = capture
    with proxy.in_thread():
        yield proxy, spy, capture


def _cli_or_skip(cls) -> str:
    exe = cls.find()
    if exe is None:
        reason = f"{cls.name} is not installed ({cls.env_var} unset; .ci/agents-up installs it); skipping the real run"
        print(reason)
        pytest.skip(reason)
    return exe


def _canon_args(args) -> str:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args
    return json.dumps(args, sort_keys=True)


def _parts_text(content) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    out = []
    for part in content:
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            out.append(part["text"])
        elif kind == "tool_use":
            out.append(part["name"] + _canon_args(part["input"]))
        elif kind == "tool_result":
            out += _parts_text(part.get("content"))
    return out


def sent_texts(path: str, body: dict) -> list[str]:
    """Every text, tool call and tool result an agent sent, in order, from the raw body of any of the three APIs."""
    if path.endswith("/messages"):
        system = body.get("system")
        out = _parts_text(system)
        for m in body["messages"]:
            out += _parts_text(m["content"])
        return out
    if path.endswith("/responses"):
        out = [body["instructions"]] if body.get("instructions") else []
        items = [{"type": "message", "content": body["input"]}] if isinstance(body["input"], str) else body["input"]
        for item in items:
            kind = item.get("type", "message")
            if kind == "message":
                out += _parts_text(item["content"])
            elif kind == "function_call":
                out.append(item["name"] + _canon_args(item["arguments"]))
            elif kind == "function_call_output":
                out += _parts_text(item["output"])
        return out
    return recorded_texts(body["messages"])


def recorded_texts(messages: list[dict]) -> list[str]:
    """The same, from chat messages (what the proxy recorded for a call)."""
    out = []
    for m in messages:
        out += _parts_text(m.get("content"))
        out += [c["function"]["name"] + _canon_args(c["function"]["arguments"]) for c in m.get("tool_calls") or []]
    return out


def _squash(texts: list[str]) -> str:
    return re.sub(r"\s+", "", "".join(texts))


def check_session(sess, spy, capture, start: int, captured_from: int, route: str) -> None:
    """Two calls or more of one conversation, each extending the last exactly; token-exact; messages as sent."""
    calls = sess.calls
    assert len(calls) >= 2 and not sess.errors, (len(calls), sess.errors)
    assert max(len(seg.calls) for seg in sess.segments) >= 2, [(s.reason, s.calls) for s in sess.segments]
    prompts = spy.prompts[start:]
    assert len(prompts) == len(calls)
    for seg in sess.segments:
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            assert prompts[b] == prompts[a] + calls[a].completion_ids + calls[b].bridge_ids
    for seg, rollout in zip(sess.segments, sess.rollouts(), strict=True):
        view, last = rollout.token_view(), seg.calls[-1]
        assert rollout.token_exact and rollout.error is None and rollout.prompt_ids == prompts[seg.calls[0]]
        assert view["prompt_ids"] + view["completion_ids"] == prompts[last] + calls[last].completion_ids
        assert len(view["logprobs"]) == len(view["completion_ids"]) == len(view["env_mask"])
        assert sum(view["env_mask"]) == sum(len(calls[i].completion_ids) for i in seg.calls)  # sampled ids only
    bodies = capture.bodies[captured_from:]
    assert [p.endswith(route) for p, _ in bodies] == [True] * len(calls), [p for p, _ in bodies]
    for call, (path, body) in zip(calls, bodies, strict=True):
        assert _squash(recorded_texts(call.request_messages)) == _squash(sent_texts(path, body))


def _run(agent_proxy, tmp_path, agent, prompts, session_id, route):
    proxy, spy, capture = agent_proxy
    cli_agent = _example("cli_agent")
    sess = proxy.session(session_id)
    start, captured_from = len(spy.prompts), len(capture.bodies)
    (tmp_path / "work").mkdir()
    run = cli_agent.Run(workdir=tmp_path / "work", home=tmp_path / "home", base_url=sess.base_url, api_key=API_KEY)
    outputs = asyncio.run(agent.converse(run, prompts))
    check_session(sess, spy, capture, start, captured_from, route)
    return sess, outputs


@pytest.mark.slow
def test_claude_code_follow_up_continues_its_session_token_exact(agent_proxy, tmp_path):
    mod = _example("claude_code")
    _cli_or_skip(mod.ClaudeCode)
    agent = mod.ClaudeCode(
        max_output_tokens=200, system_prompt="You are a helpful assistant. Answer in a few words.", timeout_s=600
    )
    sess, outputs = _run(agent_proxy, tmp_path, agent, ["Say hello.", "Now say goodbye."], "claude-code", "/messages")
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert [r["is_error"] for r in results] == [False, False] and results[0]["session_id"] == results[1]["session_id"]
    assert results[1]["result"] == sess.calls[-1].reply["content"].strip()  # what the CLI printed is what was sampled


@pytest.mark.slow
def test_codex_resume_continues_its_session_token_exact(agent_proxy, tmp_path):
    mod = _example("codex")
    _cli_or_skip(mod.Codex)
    agent = mod.Codex(system_prompt="You are a helpful assistant. Answer in a few words.", timeout_s=600)
    sess, outputs = _run(agent_proxy, tmp_path, agent, ["Say hello.", "Now say goodbye."], "codex", "/responses")
    events = [json.loads(line) for line in outputs[1].splitlines() if line.startswith("{")]
    said = [
        e["item"]["text"] for e in events if e.get("type") == "item.completed" and e["item"]["type"] == "agent_message"
    ]
    assert said and said[-1].strip() == (sess.calls[-1].reply["content"] or "").strip()


@pytest.mark.slow
def test_opencode_continue_extends_its_session_token_exact(agent_proxy, tmp_path):
    mod = _example("opencode")
    _cli_or_skip(mod.OpenCode)
    agent = mod.OpenCode(
        max_output_tokens=64, system_prompt="You are a helpful assistant. Answer in a few words.", timeout_s=600
    )
    sess, _ = _run(agent_proxy, tmp_path, agent, ["Say hello.", "Now say goodbye."], "opencode", "/chat/completions")
    tools = [t["function"]["name"] for t in sess.rollouts()[-1].tools]
    assert tools == ["bash"]  # the example's small build agent


@pytest.mark.slow
def test_mini_swe_agent_steps_continue_its_session_token_exact(agent_proxy, tmp_path):
    mod = _example("mini_swe_agent")
    _cli_or_skip(mod.MiniSweAgent)
    agent = mod.MiniSweAgent(
        step_limit=2,
        textbased=True,
        short_prompts=True,
        max_output_tokens=96,
        system_prompt="You are a helpful assistant that runs shell commands.",
        timeout_s=600,
    )
    task = "Run this command:\n```bash\necho hello\n```\nReply with the command in a bash code block."
    sess, _ = _run(agent_proxy, tmp_path, agent, [task], "mini-swe-agent", "/chat/completions")
    assert [s.reason for s in sess.segments] == ["first call"]
    observation = sess.calls[1].request_messages[-1]["content"]
    assert "hello" in observation  # mini ran the model's command and sent its output back


AGENT_CLASSES = [
    ("claude_code", "ClaudeCode"),
    ("codex", "Codex"),
    ("opencode", "OpenCode"),
    ("mini_swe_agent", "MiniSweAgent"),
]


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("module,name", AGENT_CLASSES, ids=[m for m, _ in AGENT_CLASSES])
def test_rollout_func_runs_the_cli_on_a_bundled_swe_task_and_grades_its_diff(module, name, tool_tok, docker_engine):
    """Each example's TRL `rollout_func`: the CLI in a checkout of a bundled SWE task, through its own proxy session;
    the rollout is the session's main segment, token-exact; its reward is the SWE grader's verdict on the diff."""
    from rollgym.engines.transformers_engine import TransformersEngine
    from rollgym.envs.swe import load_bundled_tasks
    from rollgym.rollouts.proxy import ProxySettings

    cls = getattr(_example(module), name)
    _cli_or_skip(cls)
    options = {"step_limit": 2} if name == "MiniSweAgent" else {}
    agent = cls(max_output_tokens=96, timeout_s=600, **options)
    policy = Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)
    func = _example("cli_agent").make_rollout_func(
        agent, policy, concurrency=1, settings=ProxySettings(default_max_tokens=96, temperature=0.0)
    )
    row = load_bundled_tasks()[0].model_dump(mode="json")
    cols = func([json.dumps(row)], None)
    (rollout,), (sess,) = func.last_rollouts, func.last_sessions
    assert rollout.error is None and rollout.token_exact and sess.calls and not sess.errors
    assert rollout.reward_components["infra_failure"] == 0.0 and cols["reward"] == [
        rollout.reward_components["resolved"]
    ]
    assert task_text(sess.calls[0]) and row["problem_statement"].split("\n")[0] in task_text(sess.calls[0])
    assert cols["completion_ids"][0] == rollout.token_view()["completion_ids"]


def task_text(call) -> str:
    """All the text of a call's request (the CLI wraps the task in its own prompt)."""
    return "\n".join(recorded_texts(call.request_messages))


@pytest.mark.slow
def test_claude_code_and_codex_through_the_rollgym_proxy_command(tmp_path):
    """`rollgym proxy` as a user starts it (a process; greedy, so replies end where they end), Claude Code then Codex
    on their own sessions, each with a follow-up; the sessions, read over HTTP, chain their calls exactly."""
    import os
    import subprocess
    import time

    import httpx

    claude, codex = _example("claude_code").ClaudeCode, _example("codex").Codex
    _cli_or_skip(claude)
    _cli_or_skip(codex)
    cli_agent = _example("cli_agent")
    rollgym = str(Path(sys.executable).parent / "rollgym")
    proc = subprocess.Popen(
        [rollgym, "proxy", "--port", "0", "--api-key", API_KEY, "--temperature", "0", "--max-tokens", "200"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        lines, match = [], None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not match:
            line = proc.stdout.readline()
            lines.append(line)
            match = re.search(r"new sessions: POST (\S+)/sessions", line)
            assert line or proc.poll() is None, "".join(lines)
        root, auth = match.group(1), {"authorization": f"Bearer {API_KEY}"}
        for sid, agent in (
            ("cc", claude(max_output_tokens=200, system_prompt="Answer in a few words.")),
            ("cx", codex(system_prompt="Answer in a few words.")),
        ):
            base_url = httpx.post(f"{root}/sessions", json={"session_id": sid}, headers=auth).json()["base_url"]
            run = cli_agent.Run(workdir=tmp_path, home=tmp_path / f"home-{sid}", base_url=base_url, api_key=API_KEY)
            asyncio.run(agent.converse(run, ["Say hello.", "Now say goodbye."]))
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
        rest = proc.communicate(timeout=30)[0]
    log = "".join(lines) + rest  # the access log: one line per request
    assert "POST /sessions/cc/v1/messages 200" in log and "POST /sessions/cx/v1/responses 200" in log
