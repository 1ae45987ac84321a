"""`rollgym validate` on tasks written outside rollgym: exit 0 valid, 1 invalid, 3 cannot run; `--json`; a wrong
base_commit in one line; and SIGTERM / Ctrl-C stop it with every grading container removed (143 / 130)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from support.interrupt import interruptible
from support.swe import BASE, authored_row, bundled, write_tasks
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.envs.sandbox import list_containers, prune

pytestmark = pytest.mark.docker

CLI = [sys.executable, "-m", "rollgym"]


def test_a_task_with_a_relative_sdist_validates_from_another_directory(base_image, tmp_path):
    path = write_tasks(tmp_path / "authored", authored_row())
    (tmp_path / "elsewhere").mkdir()
    res = subprocess.run(
        CLI + ["validate", "../authored/tasks.jsonl", "-j", "1"],
        cwd=tmp_path / "elsewhere",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    header = next(ln for ln in res.stdout.splitlines() if "F2P failing w/o patch" in ln)
    row = next(ln for ln in res.stdout.splitlines() if "authored__ordinal-teens" in ln)
    column = [c.strip() for c in header.split("┃")].index("F2P failing w/o patch")
    assert row.split("│")[column].strip() == f"{len(bundled().FAIL_TO_PASS)}/{len(bundled().FAIL_TO_PASS)}"
    assert path.exists()


def test_invalid_tasks_exit_1_with_json_and_a_wrong_base_commit_in_one_line(base_image, tmp_path):
    path = write_tasks(
        tmp_path,
        authored_row(instance_id="authored__no-fix", patch=""),  # the gold patch does nothing
        authored_row(instance_id="authored__wrong-commit", base_commit="abc123"),
    )
    res = CliRunner().invoke(app, ["validate", str(path), "--json", "-j", "1"])
    assert res.exit_code == 1, res.output
    no_fix, wrong = (json.loads(line) for line in res.stdout.splitlines())
    assert no_fix["verdict"] == "invalid" and no_fix["problem"].startswith("gold patch not resolved (graded: 8 tests")
    assert no_fix["f2p_failing_without_patch"] == no_fix["f2p_total"] == 8 and no_fix["gold"]["status"] == "graded"
    assert wrong["verdict"] == "invalid" and wrong["gold"] is None
    assert wrong["problem"] == (
        f"task authored__wrong-commit: base_commit abc123 is not the commit the image build "
        f"makes; its HEAD is {bundled().base_commit} - set base_commit to that"
    )
    table = CliRunner().invoke(app, ["validate", str(path), "--only", "authored__wrong-commit"])
    assert table.exit_code == 1 and "Traceback" not in table.output
    assert [ln for ln in table.output.splitlines() if "abc123" in ln][0].count("abc123") == 1


def test_a_task_that_cannot_run_exits_3_in_one_line(docker_engine, tmp_path):
    path = write_tasks(tmp_path, authored_row(env_spec={"sdist": "gone.tar.gz"}))
    res = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert res.exit_code == 3, res.output
    (row,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert row["verdict"] == "cannot_run" and "\n" not in row["problem"]
    assert str(tmp_path / "gone.tar.gz") in row["problem"] and f"task file {path}" in row["problem"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_stops_validate_and_removes_its_containers(base_image, sig):
    run_id = f"validate-{sig.name.lower()}-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        interruptible(CLI + ["validate", "--only", BASE, "-j", "1"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ROLLGYM_RUN_ID": run_id},
    )
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not list_containers(run_id=run_id):
        time.sleep(0.05)
    assert list_containers(run_id=run_id), "validate started a grading container"
    proc.send_signal(sig)
    output = proc.communicate(timeout=180)[0].decode()
    left = list_containers(run_id=run_id)
    prune(run_id=run_id)  # this session leaves nothing, even when the test fails
    assert proc.returncode == {signal.SIGTERM: 143, signal.SIGINT: 130}[sig], output
    assert "Traceback" not in output
    assert left == [], f"{sig.name} left containers"
