"""`rollgym generate` stopped by SIGINT, SIGTERM or SIGKILL while SWE sandboxes are being created and used:
exit 130 / 143 / killed, no container left (after `prune` for SIGKILL, which no process can clean up after),
and `--resume` then finishes with every (task, sample) exactly once (issue 17, items 4 and 5)."""

from __future__ import annotations

import signal

import pytest

from catalog import run_signal_case

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.parametrize("sig,seed", [(signal.SIGINT, None), (signal.SIGTERM, None), (signal.SIGKILL, None),
                                      (signal.SIGTERM, 1)],
                         ids=["SIGINT", "SIGTERM", "SIGKILL", "SIGTERM-later"])
def test_a_signal_while_sandboxes_start_leaves_no_container_and_resume_completes(docker_engine, tmp_path, sig, seed):
    """At once when the first container exists (others are being created), or at a drawn point up to 3 s later."""
    outcome = run_signal_case(sig, tmp_path / "run", seed)
    assert outcome.problems == [], outcome.problems
    assert outcome.lost == outcome.duplicated == outcome.leaked == 0
    assert sig == signal.SIGKILL or outcome.seconds < 120, f"stopping took {outcome.seconds:.0f} s"
