"""A child a test stops with SIGINT is interrupted by it even when the suite runs with SIGINT ignored (a background
job: `nohup bash .ci/run &`), as children inherit an ignored SIGINT (tests/support/interrupt.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from support.interrupt import interruptible

WAIT = "import sys, time; print('ready', flush=True); time.sleep(60)"


def _interrupted_exit_code(cmd: list[str], wait: float) -> int | None:
    """Start `cmd` with SIGINT ignored in the parent (as a background job's), SIGINT it once it runs: its exit code
    within `wait` seconds, or None when it still runs."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + wait
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return proc.poll()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_ignored_sigint_is_inherited_so_a_plain_child_is_not_interrupted():
    # still running: what failed the 8 tests that SIGINT a child, run from a background job
    assert _interrupted_exit_code([sys.executable, "-c", WAIT], wait=1.5) is None


def test_an_interruptible_child_is_interrupted_though_sigint_is_ignored():
    code = _interrupted_exit_code(interruptible([sys.executable, "-c", WAIT]), wait=30)
    assert code == -signal.SIGINT  # an uncaught KeyboardInterrupt: Python ends by SIGINT (rollgym's CLI exits 130)
