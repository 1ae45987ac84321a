"""`rollgym task build`: a new task's base_commit, each test's outcomes and role, and the lists to paste."""

from __future__ import annotations

import json

import pytest
from support.swe import authored_row, bundled, write_tasks
from typer.testing import CliRunner

from rollgym.cli import app

pytestmark = pytest.mark.docker


def test_task_build_prints_base_commit_outcomes_and_the_lists_to_paste(base_image, tmp_path, monkeypatch):
    path = write_tasks(tmp_path / "authored", authored_row(FAIL_TO_PASS=[], PASS_TO_PASS=[]))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["task", "build", str(path.relative_to(tmp_path))])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert f"  base_commit  {bundled().base_commit}" in lines
    rows = [[cell.strip() for cell in ln.split("│")[1:-1]] for ln in lines]  # the table's rows, cell by cell
    assert [bundled().FAIL_TO_PASS[0], "failed", "passed", "F2P"] in rows, res.stdout
    assert [bundled().PASS_TO_PASS[0], "passed", "passed", "P2P"] in rows
    snippet = json.loads(lines[-1])
    assert snippet == {
        "base_commit": bundled().base_commit,
        "FAIL_TO_PASS": bundled().FAIL_TO_PASS,
        "PASS_TO_PASS": bundled().PASS_TO_PASS,
    }


def test_task_build_json_and_exit_codes(base_image, tmp_path):
    path = write_tasks(
        tmp_path, authored_row(), authored_row(instance_id="authored__no-sdist", env_spec={"sdist": "gone.tar.gz"})
    )
    res = CliRunner().invoke(app, ["task", "build", str(path), "--only", "authored__no-sdist", "--json"])
    assert res.exit_code == 3, res.output  # cannot run
    (report,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert report["error"].startswith(
        "SdistNotFoundError: task authored__no-sdist: env_spec.sdist 'gone.tar.gz' not found"
    )
    res = CliRunner().invoke(app, ["task", "build", str(path), "--only", "nope"])
    assert res.exit_code == 2 and "no task nope in" in res.output
