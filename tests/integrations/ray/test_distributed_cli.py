"""`rollgym generate --ray ADDRESS` against the real 2-node cluster: Ctrl-C (130) and SIGTERM (143) mid-batch
leave a file `--resume` completes without duplicates; an unreachable address fails fast and says why; losing
the cluster's head mid-batch ends the run (exit 1) with `ClusterLostError` and a file `--resume` completes.
The engine is the vLLM stand-in on loopback (a network engine every actor shares), slowed down a little."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin
from support.interrupt import interruptible

from rollgym.cli import bare_ray_flag
from rollgym.engines.default_model import smollm2_dir
from rollgym.rollouts.output import read_rollouts

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def standin():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    app, control = make_vllm_standin(
        MODEL, max_model_len=2048, vocab_size=len(tok), eos_token_id=tok.eos_token_id, tokenizer=tok
    )
    control.delay_s = 0.3
    with LoopbackServer(app) as server:
        yield server


def command(server, out, address: str, tasks: int = 6) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rollgym",
        "generate",
        "--env",
        "rollgym/Calculator-v0",
        "--num-tasks",
        str(tasks),
        "--n",
        "4",
        "--concurrency",
        "2",
        "--max-turns",
        "1",
        "--max-tokens",
        "8",
        "--out",
        str(out),
        "--model",
        f"vllm:{server.base_url}/v1#{MODEL}",
        "--tokenizer",
        str(smollm2_dir()),
        "--ray",
        address,
    ]


def interrupted(cmd: list[str], path, sig: int) -> tuple[int, str]:
    """Run `cmd` until the file has 2 more rollouts than now, then send `sig`; return its exit code and output."""
    start = path.read_text().count("\n") if path.exists() else 0
    proc = subprocess.Popen(interruptible(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV)
    deadline = time.time() + 120
    while (
        time.time() < deadline
        and proc.poll() is None
        and (not path.exists() or path.read_text().count("\n") < start + 2)
    ):
        time.sleep(0.1)
    proc.send_signal(sig)
    output = proc.communicate(timeout=120)[0].decode()
    return proc.returncode, output


def test_ctrl_c_and_sigterm_mid_batch_leave_a_file_resume_completes(cluster, standin, tmp_path):
    out = tmp_path / "run"
    path = out / "rollouts.jsonl"
    cmd = command(standin, out, cluster.address)
    code, output = interrupted(cmd, path, signal.SIGINT)
    assert code == 130 and "interrupted" in output and "--resume" in output, output
    first = list(read_rollouts(path))
    assert 2 <= len(first) < 24 and path.read_bytes().endswith(b"\n")
    code, output = interrupted(cmd + ["--resume"], path, signal.SIGTERM)
    assert code == 143 and "terminated (SIGTERM)" in output and "--resume" in output, output
    second = list(read_rollouts(path))
    assert len(first) + 2 <= len(second) < 24 and len({r.key for r in second}) == len(second)
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(read_rollouts(path))
    assert len({r.key for r in rows}) == len(rows) == 24  # no duplicates, nothing missing
    assert all(r.error is None for r in rows), done.stderr
    assert [r.id for r in rows][: len(second)] == [r.id for r in second]  # earlier lines untouched


def test_generate_through_ray_client_equals_one_process_and_ctrl_c_resumes(cluster, standin, tmp_path):
    """`--ray ray://HEAD:PORT`: the head's real Ray Client server (no streaming methods: the driver pulls)."""
    one = tmp_path / "one"
    done = subprocess.run(
        command(standin, one, cluster.address)[:-2], capture_output=True, text=True, env=ENV, timeout=300
    )  # no --ray: one process
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "client"
    path = out / "rollouts.jsonl"
    cmd = command(standin, out, cluster.client_address)
    code, output = interrupted(cmd, path, signal.SIGINT)
    assert code == 130 and "--resume" in output, output
    first = list(read_rollouts(path))
    assert 2 <= len(first) < 24
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(read_rollouts(path))
    assert len({r.key for r in rows}) == len(rows) == 24 and all(r.error is None for r in rows), done.stderr
    views = {(r.task_id, r.sample_index): r.token_view() for r in rows}
    assert views == {(r.task_id, r.sample_index): r.token_view() for r in read_rollouts(one / "rollouts.jsonl")}


def test_an_unreachable_cluster_fails_fast_and_says_so(standin, tmp_path):
    t0 = time.monotonic()
    done = subprocess.run(
        command(standin, tmp_path / "run", "ray://127.0.0.1:9"), capture_output=True, text=True, env=ENV, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "no Ray cluster answers at ray://127.0.0.1:9" in said and "ray start --head" in said
    assert time.monotonic() - t0 < 60


def test_losing_the_head_mid_batch_ends_the_run_with_cluster_lost_and_resume_completes(standin, cluster, tmp_path):
    """A cluster of its own (the session's only takes the resume): its head (GCS, raylet) is killed mid-batch.
    Without the head watchdog the driver hung until Ray ended it a minute later with a fatal log line; now it
    exits 1 with `ClusterLostError`."""
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="rg-head-", dir="/tmp")  # short: Ray's socket paths live in it
    head = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 2, "temp_dir": temp, "node_ip_address": "127.0.0.1"}
    )
    out = tmp_path / "run"
    path, proc = out / "rollouts.jsonl", None
    try:
        address, env = head.address, {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "300"}  # no path cut in two
        proc = subprocess.Popen(
            command(standin, out, address, tasks=10), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
        )
        deadline = time.time() + 120
        while (
            time.time() < deadline and proc.poll() is None and (not path.exists() or path.read_text().count("\n") < 2)
        ):
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[0].decode()
        head.remove_node(head.head_node, allow_graceful=False)  # every process of the head, killed
        t0 = time.monotonic()
        output = proc.communicate(timeout=120)[0].decode()
        took = time.monotonic() - t0
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        head.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    said = " ".join(output.split())
    assert proc.returncode == 1, output
    assert took < 30, f"took {took:.0f} s to give up"  # head_timeout_s (10 s) + Ray's own disconnect
    first = list(read_rollouts(path))
    assert f"the Ray cluster at {address} stopped answering" in said and "--resume" in said, output
    assert f"{path} holds {len(first)} finished rollouts" in said, output
    assert 2 <= len(first) < 40 and path.read_bytes().endswith(b"\n") and len({r.key for r in first}) == len(first)
    cmd = command(standin, out, cluster.address, tasks=10) + ["--resume"]  # another cluster (the session's, up already)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(read_rollouts(path))
    assert len({r.key for r in rows}) == len(rows) == 40 and all(r.error is None for r in rows)
    assert [r.id for r in rows][: len(first)] == [r.id for r in first]  # earlier lines untouched


def test_a_bare_ray_flag_means_a_local_instance():
    assert bare_ray_flag(["generate", "--ray"]) == ["generate", "--ray", "local"]
    assert bare_ray_flag(["--ray", "--workers", "2"]) == ["--ray", "local", "--workers", "2"]
    assert bare_ray_flag(["--ray", "auto"]) == ["--ray", "auto"]
