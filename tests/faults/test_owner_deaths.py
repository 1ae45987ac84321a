"""`rollgym generate` killed with SIGKILL mid-batch, 8 SWE sandboxes running (issue 32, items 1-3): with nothing else
run (no prune, no process of ours), every container of the run ends by its own lease within lease + 30 s (exit 3: its
PID 1 ended it); a sandbox of another owner on the same daemon runs on; the run's record lists every one, and
`rollgym sandbox prune --run` finds none left to remove; `--resume` then completes the batch. The engine is the vLLM
stand-in over real HTTP (tests/faults/conftest.py), 2 s a turn while the run is killed: the real SmolLM2 would spend a
minute on the SWE prompts' prefill, and the engine is not what is tested here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from support.lease import LAPSED, DeathWatch, containers_of, seconds_until_gone

from rollgym.engines.default_model import smollm2_dir
from rollgym.envs.sandbox import DockerSandbox, SandboxConfig
from rollgym.envs.sandbox.record import read_record
from rollgym.rollouts.output import read_rollouts

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"  # what the `standin` fixture serves (tests/faults/conftest.py)
pytestmark = [pytest.mark.docker, pytest.mark.slow]

LEASE_S = 5
GENERATE = [sys.executable, "-m", "rollgym", "generate", "--env", "rollgym/SWE-v0", "--tasks", "bundled"]
BATCH = ["--num-tasks", "4", "--n", "2", "--concurrency", "8"]  # 8 rollouts at once, one sandbox each


def test_generate_killed_mid_batch_leaves_nothing_behind_and_resume_completes(base_image, standin, tmp_path):
    server, control = standin
    engine = ["--model", f"vllm:{server.base_url}/v1#{MODEL}", "--tokenizer", str(smollm2_dir())]
    run_id = f"kill9-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ROLLGYM_RUN_ID": run_id, "ROLLGYM_SANDBOX_LEASE_S": str(LEASE_S)}
    bystander = DockerSandbox(SandboxConfig(image=base_image, task_id="bystander", use_runner=False))
    try:
        with DeathWatch(run_id) as watch:
            control.delay_s = 2.0  # turns long enough for all 8 sandboxes to be up together
            proc = subprocess.Popen(
                [*GENERATE, *BATCH, *engine, "--max-turns", "8", "--max-tokens", "32", "--out", str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
            )
            deadline = time.monotonic() + 300
            while (
                len(containers_of(run_id, state="running")) < 8 and proc.poll() is None and time.monotonic() < deadline
            ):
                time.sleep(0.1)  # all 8 running: none is inside its create call (none would be left never started)
            names = containers_of(run_id)
            proc.kill()
            output = proc.communicate(timeout=60)[0].decode(errors="replace")
            assert len(names) >= 8, f"the run had {len(names)} sandboxes when killed: {output[-800:]}"
            seconds = seconds_until_gone(names, timeout_s=LEASE_S + 30)
            print(f"rollgym generate killed with 8 SWE sandboxes: all gone {seconds:.1f} s later")  # the fault table
            assert seconds < LEASE_S + 30 and not containers_of(run_id)
            time.sleep(0.5)
            assert {watch.exits.get(n) for n in names} == {LAPSED}, watch.exits
        recorded = {e.name: e for e in read_record(out)}
        assert names <= recorded.keys() and all(recorded[n].ended is None for n in names)  # on record, never closed
        pruned = subprocess.run(
            [sys.executable, "-m", "rollgym", "sandbox", "prune", "--run", str(out)], capture_output=True, text=True
        )
        assert pruned.returncode == 0 and "removed 0 sandbox(es)" in pruned.stdout, pruned.stdout + pruned.stderr
        assert bystander.status() == "running"  # another owner's sandbox on the same daemon: untouched
        control.delay_s = 0.0
        done = subprocess.run(
            [*GENERATE, *BATCH, *engine, "--max-turns", "2", "--max-tokens", "16", "--out", str(out), "--resume"],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-800:]
        keys = [r.key for r in read_rollouts(out / "rollouts.jsonl")]
        assert len(keys) == len(set(keys)) == 8
        assert not containers_of(run_id)
        assert all(e.ended is not None for e in read_record(out))  # every sandbox on record has ended
    finally:
        control.delay_s = 0.0
        bystander.close()
