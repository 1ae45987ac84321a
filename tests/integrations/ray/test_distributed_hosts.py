"""`rollgym generate --workers 2 --docker-host A --docker-host B`, end to end: SWE rollouts with the real SmolLM2 on
two Ray actors whose sandboxes spread over two real Docker daemons, the second reached over ssh (a real sshd,
`.ci/docker-up --ssh`), interrupted, then resumed. Each daemon is asked which of the run's containers it holds, all
along the run (its event log keeps only its last 256 events, which other tests' containers on the machine's own
daemon can push out)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from support.docker2 import DOCKER2, DOCKER2_SSH, SSH_BIN, start_docker2_ssh
from support.interrupt import interruptible

from rollgym.envs.sandbox import DEFAULT_HOST, list_containers
from rollgym.rollouts.output import read_rollouts

pytestmark = pytest.mark.docker


class Seen(threading.Thread):
    """The run's containers each daemon held at any moment while it runs (sandboxes live for a whole rollout)."""

    def __init__(self, run_id: str, hosts: list[str]) -> None:
        super().__init__(daemon=True)
        self.run_id, self.hosts, self.done = run_id, hosts, threading.Event()
        self.names: dict[str, set[str]] = {h: set() for h in hosts}

    def run(self) -> None:
        while not self.done.is_set():
            for host in self.hosts:
                try:
                    self.names[host].update(list_containers(self.run_id, host))
                except Exception:  # noqa: BLE001 - a daemon busy for a moment: asked again 0.1 s later
                    pass
            time.sleep(0.1)


def test_generate_on_ray_actors_spreads_sandboxes_over_a_local_and_an_ssh_host(docker_engine, base_image, tmp_path):
    """Ctrl-C once sandboxes run on both hosts: exit 130 and no container left on either daemon; `--resume` then
    completes the run, with sandboxes on both."""
    start_docker2_ssh()
    run_id = f"rayhosts-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ROLLGYM_RUN_ID": run_id, "PATH": f"{SSH_BIN}:{os.environ['PATH']}"}
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "rollgym",
        "generate",
        "--env",
        "rollgym/SWE-v0",
        "--tasks",
        "bundled",
        "--num-tasks",
        "2",
        "--n",
        "2",
        "--concurrency",
        "4",
        "--max-turns",
        "2",
        "--max-tokens",
        "16",
        "--workers",
        "2",
        "--docker-host",
        DEFAULT_HOST,
        "--docker-host",
        DOCKER2_SSH,
        "--out",
        str(out),
    ]
    both = [DEFAULT_HOST, DOCKER2]  # the second daemon asked over its own socket, not through ssh
    seen = Seen(run_id, both)
    seen.start()
    proc = subprocess.Popen(interruptible(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not all(list_containers(run_id, h) for h in both):
        time.sleep(0.1)
    assert all(list_containers(run_id, h) for h in both), "the run never had sandboxes on both hosts at once"
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=180)[0].decode()
    assert proc.returncode == 130 and "--resume" in output, output[-2000:]
    assert list_containers(run_id=run_id, docker_host=both) == []  # each actor released its sandboxes, on both hosts
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = list(read_rollouts(out / "rollouts.jsonl"))
    assert len({r.key for r in rows}) == len(rows) == 4
    assert [r.error.message for r in rows if r.error is not None and r.error.category == "sandbox"] == []
    seen.done.set()
    seen.join()
    on_local, on_ssh = len(seen.names[DEFAULT_HOST]), len(seen.names[DOCKER2])
    assert on_local >= 2 and on_ssh >= 2, f"sandboxes per daemon: local {on_local}, ssh {on_ssh}"
    assert list_containers(run_id=run_id, docker_host=both) == []
