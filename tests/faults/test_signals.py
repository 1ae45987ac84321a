"""`rollgym generate` stopped by SIGINT, SIGTERM or SIGKILL while SWE sandboxes are being created and used:
exit 130 / 143 / killed, no container left (after `prune` for SIGKILL, which no process can clean up after),
and `--resume` then finishes with every (task, sample) exactly once (issue 17, items 4 and 5)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from rollgym.envs.sandbox import list_containers, prune
from rollgym.rollouts.output import read_rollouts

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CMD = [sys.executable, "-m", "rollgym.rollouts.cli", "generate", "--env", "rollgym/SWE-v0", "--tasks", "bundled",
       "--num-tasks", "3", "--n", "2", "--concurrency", "6", "--max-turns", "2", "--max-tokens", "16"]
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}


def _start(out, run_id: str) -> subprocess.Popen:
    return subprocess.Popen(CMD + ["--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "ROLLGYM_RUN_ID": run_id})


def _wait_for_first_container(proc: subprocess.Popen, run_id: str) -> None:
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not list_containers(run_id=run_id):
        time.sleep(0.05)
    assert list_containers(run_id=run_id), "the run started sandboxes"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_while_sandboxes_start_leaves_no_container_and_resume_completes(docker_engine, tmp_path, sig):
    run_id = f"sig-{sig.name.lower()}-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "run"
    proc = _start(out, run_id)
    _wait_for_first_container(proc, run_id)
    t0 = time.time()
    proc.send_signal(sig)  # while the other sandboxes are still being created
    output = proc.communicate(timeout=180)[0].decode()
    stop_s = time.time() - t0
    assert proc.returncode == EXIT[sig], output
    if sig == signal.SIGKILL:  # nothing runs after SIGKILL: the containers are orphans, and prune knows them
        time.sleep(5)  # creations the daemon had accepted finish
        prune()
    else:
        assert "--resume" in output
        assert stop_s < 120, f"stopping took {stop_s:.0f} s"
    assert list_containers(run_id=run_id) == [], f"{sig.name} leaked containers"
    path = out / "rollouts.jsonl"
    before = list(read_rollouts(path)) if path.exists() else []
    done = subprocess.run(CMD + ["--out", str(out), "--resume"], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "ROLLGYM_RUN_ID": run_id})
    assert done.returncode == 0, done.stdout + done.stderr
    keys = [r.key for r in read_rollouts(path)]
    assert len(keys) == len(set(keys)) == 6, keys
    assert [r.id for r in read_rollouts(path)][: len(before)] == [r.id for r in before]
    assert list_containers(run_id=run_id) == []
