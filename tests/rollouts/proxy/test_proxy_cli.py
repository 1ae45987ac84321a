"""`rollgym proxy` as a user runs it: a real process, a vLLM-protocol engine on loopback, the openai client."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
from typer.testing import CliRunner

from rollgym.rollouts.cli import app
from rollgym.rollouts.engines.testing.loopback import LoopbackServer
from rollgym.rollouts.engines.testing.vllm_standin import make_vllm_standin


def test_public_bind_needs_an_api_key():
    result = CliRunner().invoke(app, ["proxy", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "without --api-key" in result.output


def test_proxy_command_serves_sessions_with_a_key():
    from rollgym.rollouts.engines.default_model import smollm2_dir

    standin, control = make_vllm_standin("m/x", max_model_len=4096, vocab_size=49152, eos_token_id=2)
    rollgym = str(Path(sys.executable).parent / "rollgym")
    with LoopbackServer(standin) as engine_server:
        proc = subprocess.Popen([rollgym, "proxy", "--model", f"vllm:{engine_server.base_url}/v1#m/x", "--tokenizer",
                                 str(smollm2_dir()), "--port", "0", "--api-key", "k3y", "--max-tokens", "8"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"})
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
            resp = client.chat.completions.create(model="m/x", messages=[{"role": "user", "content": "hi"}])
            assert resp.usage.completion_tokens <= 8 and control.requests[-1]["prompt"]  # the engine got token ids
            root = base_url.rsplit("/sessions/", 1)[0]
            session = httpx.get(f"{root}/sessions/default", headers={"authorization": "Bearer k3y"}).json()
            assert session["calls"][0]["completion_ids"] and session["segments"][0]["reason"] == "first call"
            assert httpx.get(f"{root}/sessions/default").status_code == 401
        finally:
            proc.terminate()
            proc.wait(20)
