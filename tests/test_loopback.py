"""The loopback check the whole suite runs under (tests/conftest.py, tests/support/loopback.py) sees a server that
listens beyond loopback, files it under the process tree or session mark that started it, and passes loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from support.loopback import MARK, LoopbackWatch, wide

pytestmark = pytest.mark.loopback_probe  # these tests open servers beyond loopback on purpose

SERVE = "import socket, sys, time; s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)"


def serve(host: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, host], stdout=subprocess.PIPE, text=True, env=env)
    return proc, int(proc.stdout.readline())


def test_a_server_beyond_loopback_is_caught_and_a_loopback_one_is_not():
    watch = LoopbackWatch(os.environ[MARK], os.getpid(), period_s=60)  # sampled by hand here
    watch.current = "probe"
    inside, inside_port = serve("127.0.0.1")
    outside, outside_port = serve("0.0.0.0")
    try:
        found = watch.take("probe")
        assert len(found) == 1 and f"0.0.0.0:{outside_port} (pid {outside.pid}" in found[0], found
        assert not any(f":{inside_port} " in text for text in found)
    finally:
        for proc in (inside, outside):
            proc.kill()
            proc.wait()


def test_a_daemonized_server_is_known_by_its_mark_and_another_sessions_is_left_alone():
    """A server that left the process tree (as `.ci/vllm-up` starts vLLM) still carries the mark; one with another
    session's mark and outside this process tree is the other session's business."""
    watch = LoopbackWatch(os.environ[MARK], os.getpid(), period_s=60)
    watch.current = "probe"
    env = {**os.environ, MARK: "another-session"}
    theirs, _ = serve("0.0.0.0", env=env)
    try:
        watch.root_pid = -1  # as if no process of this session were its ancestor
        ours_by_mark, port = serve("0.0.0.0")
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and len([w for w in wide().values() if w.port == port]) == 0:
                time.sleep(0.05)
            found = watch.take("probe")
            assert [f"0.0.0.0:{port} (pid {ours_by_mark.pid}" in text for text in found] == [True], found
        finally:
            ours_by_mark.kill()
            ours_by_mark.wait()
    finally:
        theirs.kill()
        theirs.wait()
