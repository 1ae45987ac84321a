"""The real `aider` CLI against the proxy (real SmolLM2): one scripted request, recorded token-exact.

Aider is an optional extra (`rollgym[aider]`, ~2.5 min to install, so not in `test`): without it
(`aider` on PATH, next to this Python, or $ROLLGYM_AIDER) the test is skipped, saying so.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from rollgym.rollouts.core.policy import Policy

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "aider" / "aider_agent.py"


def _example():
    spec = importlib.util.spec_from_file_location("rollgym_aider_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_aider_command_scripts_aider_as_documented():
    cmd = _example().aider_command(
        "aider", "http://127.0.0.1:1/sessions/s/v1", "k", "fix it", ["a.py"], history_dir="/tmp/h"
    )
    for flag in ("--no-auto-commits", "--no-suggest-shell-commands", "--yes-always"):
        assert flag in cmd
    assert cmd[cmd.index("--edit-format") + 1] == "whole" and cmd[cmd.index("--model") + 1] == "openai/rollgym"
    assert cmd[cmd.index("--openai-api-base") + 1] == "http://127.0.0.1:1/sessions/s/v1" and cmd[-1] == "a.py"


def _aider_or_skip(example) -> str:
    aider = example.find_aider()
    if aider is None:
        reason = (
            "aider is not installed (pip install 'rollgym[aider]' or set ROLLGYM_AIDER); skipping the real Aider run"
        )
        print(reason)
        pytest.skip(reason)
    return aider


@pytest.mark.slow
def test_aider_whole_file_edit_becomes_the_agent_diff(ptok, tmp_path):
    """A scripted model answering in Aider's `whole` format: Aider writes the file, the agent returns the fix as a diff."""
    example = _example()
    aider = _aider_or_skip(example)
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.swe import checkout_task, load_bundled_tasks
    from rollgym.rollouts.proxy import ProxySettings, RecordingProxy

    task = load_bundled_tasks()[0]
    fixed = checkout_task(task, tmp_path / "fixed")
    import subprocess

    subprocess.run(["patch", "-p1"], cwd=fixed, input=task.patch.encode(), check=True, capture_output=True)
    source = (fixed / "inflection" / "__init__.py").read_text()
    reply = ptok.encode(f"inflection/__init__.py\n```python\n{source}```\n") + [ptok.end_of_turn_id]
    proxy = RecordingProxy(
        Policy(engine=ScriptedEngine(lambda prompt, sampling: reply), tokenizer=ptok),
        settings=ProxySettings(default_max_tokens=len(reply) + 8),
    )
    with proxy.in_thread():
        sess = proxy.session()
        diff = asyncio.run(
            example.AiderAgent(aider=aider, timeout_s=300)(task.model_dump(mode="json"), sess.base_url, None)
        )
    assert sess.calls[0].finish_reason == "stop", sess.calls[0].finish_reason
    assert "-    if number % 100 in (11, 12):" in diff and "+    if number % 100 in (11, 12, 13):" in diff
    assert sess.calls and sess.calls[0].completion_ids == reply and not sess.errors


@pytest.mark.slow
def test_real_aider_request_is_recorded_token_exact(request):
    example = _example()
    aider = _aider_or_skip(example)
    from rollgym.envs.swe import load_bundled_tasks

    proxy, spy = request.getfixturevalue("real_proxy")  # load the model only when Aider can run
    row = load_bundled_tasks()[0].model_dump(mode="json")
    sess = proxy.session(task_id=row["instance_id"])
    start = len(spy.prompts)
    diff = asyncio.run(example.AiderAgent(aider=aider, timeout_s=600)(row, sess.base_url, proxy.api_key))
    assert isinstance(diff, str) and ".aider" not in diff
    assert sess.calls and not sess.errors
    first = sess.calls[0]
    assert "ordinalize" in first.request_messages[-1]["content"]  # Aider sent the task's problem statement
    prompts = spy.prompts[start:]
    rollouts = sess.rollouts()
    assert rollouts[0].prompt_ids == prompts[0] and rollouts[0].token_exact
    for seg in sess.segments:  # Aider's reflections (if any) continue the conversation exactly
        for a, b in zip(seg.calls, seg.calls[1:], strict=False):
            assert prompts[b] == prompts[a] + sess.calls[a].completion_ids + sess.calls[b].bridge_ids
    assert all(len(c.logprobs) == len(c.completion_ids) > 0 for c in sess.calls)
