"""`rollgym generate --ray ADDRESS` against the real 2-node cluster: Ctrl-C (130) and SIGTERM (143) mid-batch
leave a file `--resume` completes without duplicates; an unreachable address fails fast and says why.
The engine is the vLLM stand-in on loopback (a network engine every actor shares), slowed down a little."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray", reason="the distributed tests need Ray: pip install 'rollgym[ray]'")

from rollgym.rollouts.cli import bare_ray_flag  # noqa: E402
from rollgym.rollouts.engines.default_model import smollm2_dir  # noqa: E402
from rollgym.rollouts.engines.testing.loopback import LoopbackServer  # noqa: E402
from rollgym.rollouts.engines.testing.vllm_standin import make_vllm_standin  # noqa: E402
from rollgym.rollouts.output import read_rollouts  # noqa: E402

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def standin():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    app, control = make_vllm_standin(MODEL, max_model_len=2048, vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                                     tokenizer=tok)
    control.delay_s = 0.3
    with LoopbackServer(app) as server:
        yield server


def command(server, out, address: str) -> list[str]:
    return [sys.executable, "-m", "rollgym.rollouts.cli", "generate", "--env", "rollgym/Calculator-v0", "--num-tasks", "6",
            "--n", "4", "--concurrency", "2", "--max-turns", "1", "--max-tokens", "8", "--out", str(out),
            "--model", f"vllm:{server.base_url}/v1#{MODEL}", "--tokenizer", str(smollm2_dir()), "--ray", address]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_batch_leaves_a_file_resume_completes(cluster, standin, tmp_path, sig, code):
    out = tmp_path / "run"
    cmd = command(standin, out, cluster.address)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV)
    path = out / "rollouts.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not path.exists() or path.read_text().count("\n") < 2) and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(sig)
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == code, output
    assert "--resume" in output
    first = list(read_rollouts(path))
    assert 2 <= len(first) < 24 and path.read_bytes().endswith(b"\n")
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(read_rollouts(path))
    assert len({r.key for r in rows}) == len(rows) == 24  # no duplicates, nothing missing
    assert all(r.error is None for r in rows), done.stderr
    assert [r.id for r in rows][: len(first)] == [r.id for r in first]  # earlier lines untouched


def test_an_unreachable_cluster_fails_fast_and_says_so(standin, tmp_path):
    t0 = time.monotonic()
    done = subprocess.run(command(standin, tmp_path / "run", "ray://127.0.0.1:9"), capture_output=True, text=True,
                          env=ENV, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "no Ray cluster answers at ray://127.0.0.1:9" in said and "ray start --head" in said
    assert time.monotonic() - t0 < 60


def test_a_bare_ray_flag_means_a_local_instance():
    assert bare_ray_flag(["generate", "--ray"]) == ["generate", "--ray", "local"]
    assert bare_ray_flag(["--ray", "--workers", "2"]) == ["--ray", "local", "--workers", "2"]
    assert bare_ray_flag(["--ray", "auto"]) == ["--ray", "auto"]
