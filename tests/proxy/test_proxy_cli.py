"""`rollgym proxy` as a user runs it: a real process over the real vLLM, the real openai client."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from support.interrupt import interruptible
from support.vllm import assert_token_exact
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.rollouts.records import Rollout


def test_public_bind_needs_an_api_key():
    result = CliRunner().invoke(app, ["proxy", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "without --api-key" in result.output


@pytest.mark.vllm
@pytest.mark.slow
def test_proxy_command_over_the_real_vllm(real_vllm, tools, smollm2_fp32):
    """`rollgym proxy --model vllm:...` as a process over the real vLLM, the real openai client: plain chat, tools
    and streaming; each call's ids are the ones vLLM returned, recorded token-exact in the session."""
    rollgym = str(Path(sys.executable).parent / "rollgym")
    proc = subprocess.Popen(
        [rollgym, "proxy", "--model", real_vllm.spec, "--port", "0", "--api-key", "k3y", "--max-tokens", "24"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if match := re.search(r"session 'default': OPENAI_BASE_URL=(\S+)", line):
                break
            assert line or proc.poll() is None, "".join(lines)
        base_url = match.group(1)
        client = openai.OpenAI(base_url=base_url, api_key="k3y", max_retries=0)
        plain = client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Say hello."}], seed=1
        )
        with_tools = client.chat.completions.create(
            model="smollm2",
            seed=2,
            tools=tools,
            messages=[{"role": "user", "content": "What is 2 + 3? Use the add tool."}],
        )
        chunks = list(
            client.chat.completions.create(
                model="smollm2",
                messages=[{"role": "user", "content": "Write one sentence about the sea."}],
                seed=3,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        root = base_url.rsplit("/sessions/", 1)[0]
        session = httpx.get(f"{root}/sessions/default", headers={"authorization": "Bearer k3y"}).json()
        calls = session["calls"]
        assert len(calls) == 3 and all(c["completion_ids"] for c in calls)
        assert [c.usage.completion_tokens for c in (plain, with_tools)] == [len(c["completion_ids"]) for c in calls[:2]]
        assert plain.choices[0].message.content == calls[0]["message"]["content"]
        assert streamed == (calls[2]["message"]["content"] or "") and chunks[-1].usage.completion_tokens == len(
            calls[2]["completion_ids"]
        )
        assert all(len(c["logprobs"]) == len(c["completion_ids"]) <= 24 for c in calls)
        assert httpx.get(f"{root}/sessions/default").status_code == 401
        recorded = httpx.get(f"{root}/sessions/default/rollouts", headers={"authorization": "Bearer k3y"}).json()
        assert recorded
        for raw in recorded:  # what the proxy recorded is what vLLM sampled, in its full context
            assert_token_exact(Rollout.model_validate(raw), smollm2_fp32)
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_proxy_gracefully_with_128_plus_the_signal(sig, code):
    """Issue 17, item 5: SIGTERM (Kubernetes, SLURM, Ray, `timeout`) stops the proxy as Ctrl-C does: a
    request in flight is answered, the server shuts down, and the exit code says which signal (not -15)."""
    rollgym = str(Path(sys.executable).parent / "rollgym")
    proc = subprocess.Popen(
        interruptible([rollgym, "proxy", "--port", "0", "--max-tokens", "8"]),
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
            match = re.search(r"session 'default': OPENAI_BASE_URL=(\S+)", line)
            assert line or proc.poll() is None, "".join(lines)
        client = openai.OpenAI(base_url=match.group(1), api_key="x", max_retries=0)
        assert client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}]).choices
        proc.send_signal(sig)
        rest = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, "".join(lines) + rest
    assert "Shutting down" in rest
