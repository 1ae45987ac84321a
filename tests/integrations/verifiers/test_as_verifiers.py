"""A rollgym environment as a verifiers environment (`to_verifiers`), run by verifiers' own code end to end: its
`SingleAgentEnv.run_episode`, its `null` chat harness (a PEP 723 program `uv` installs, in a local subprocess
runtime), its interception server and eval client, the environment's tools served by verifiers' MCP launcher, and the
model behind rollgym's recording proxy (an OpenAI-compatible server). The reward is the environment's own; the proxy
records every model call token-exact."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.suites.reasoning_gym.expression import evaluate
from rollgym.proxy.server import RecordingProxy

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed: pip install 'rollgym[verifiers]'")

from rollgym.integrations.verifiers.as_verifiers import to_verifiers  # noqa: E402 - imported after the skip above: it needs verifiers


def _uv_on_path() -> None:
    """verifiers' chat harness runs under `uv` (else it would `pip install --user uv` on this host): skip without."""
    beside = Path(sys.executable).parent
    if not shutil.which("uv") and (beside / "uv").exists():
        os.environ["PATH"] = f"{beside}{os.pathsep}{os.environ['PATH']}"
    if not shutil.which("uv"):
        pytest.skip("no `uv` here (the `test` extra installs it): verifiers' chat harness needs it")


def solving_policy(tool_tok, say):
    """Submit the question's value with the `submit` tool, then say done."""

    def reply(prompt_ids, sampling):
        prompt = tool_tok.decode(prompt_ids)
        if "<tool_response>" in prompt:
            return say.text("Submitted.")
        expression = re.search(r"What is (.*)\?", prompt).group(1)
        return say.call("submit", answer=int(evaluate(expression)))

    return rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)


@pytest.mark.slow
def test_verifiers_own_rollout_plays_a_rollgym_environment_through_the_proxy(tool_tok, say, monkeypatch):
    _uv_on_path()
    monkeypatch.setenv("ROLLGYM_TEST_NO_KEY", "EMPTY")

    async def run() -> tuple[list, list]:
        async with RecordingProxy(solving_policy(tool_tok, say)) as proxy:
            session = proxy.session()
            env = to_verifiers("rollgym/Calculator-v0", num_tasks=2)
            ctx = vf.ModelContext(
                model="smollm2",
                client=vf.EvalClientConfig(base_url=session.base_url, api_key_var="ROLLGYM_TEST_NO_KEY"),
            )
            async with env.serving():
                episodes = [await env.run_episode(task, ctx) for task in env.taskset]
            return episodes, session.rollouts()

    episodes, recorded = asyncio.run(run())
    assert len(episodes) == 2
    for episode in episodes:
        (trace,) = episode.traces
        assert episode.ok and trace.ok, (episode.errors, trace.errors)
        assert trace.reward == 1.0 and trace.metrics == {"rollgym/correct": 1.0, "rollgym/submitted": 1.0}
        calls = [c for m in trace.assistant_messages for c in (m.tool_calls or [])]
        assert [c.name for c in calls] == ["submit"] and trace.tool_messages[0].content
    assert recorded and all(r.token_exact for r in recorded)
