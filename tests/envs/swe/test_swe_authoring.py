"""Authoring a task rollgym does not bundle: its image builds from a relative sdist, a wrong base_commit is one
line giving the right commit, and `build_report` finds the FAIL_TO_PASS / PASS_TO_PASS the bundled task has."""

from __future__ import annotations

import pytest
from support.swe import authored_row, bundled, write_tasks

from rollgym.envs.swe import ensure_task_image, parse_tasks, task_image_name
from rollgym.envs.swe.authoring import build_report
from rollgym.envs.swe.base_commit import check_image
from rollgym.envs.swe.errors import WrongBaseCommitError

pytestmark = pytest.mark.docker

RIGHT = bundled().base_commit


def test_a_wrong_base_commit_is_one_line_with_the_right_commit(base_image, tmp_path):
    (task,) = parse_tasks(write_tasks(tmp_path, authored_row(base_commit="abc123")))
    with pytest.raises(WrongBaseCommitError) as info:
        ensure_task_image(task, log=lambda _m: None)
    assert str(info.value) == (
        f"task authored__ordinal-teens: base_commit abc123 is not the commit the image build "
        f"makes; its HEAD is {RIGHT} - set base_commit to that"
    )
    assert info.value.head == RIGHT


def test_a_prebuilt_image_without_the_base_commit_is_one_line_with_its_head(base_image):
    image = ensure_task_image(bundled(), log=lambda _m: None)
    task = bundled().model_copy(update={"image_name": image, "env_spec": None, "base_commit": "f" * 40})
    with pytest.raises(
        WrongBaseCommitError,
        match=f"^task {task.instance_id}: base_commit f{{40}} is not in the "
        f"repository; its HEAD is {RIGHT} - set base_commit to that$",
    ):
        check_image(task, image)
    check_image(bundled().model_copy(update={"image_name": image, "env_spec": None}), image)  # the right one passes


def test_build_report_suggests_the_bundled_tasks_lists_and_the_right_base_commit(base_image, tmp_path, monkeypatch):
    path = write_tasks(tmp_path / "authored", authored_row(base_commit="", FAIL_TO_PASS=[], PASS_TO_PASS=[]))
    monkeypatch.chdir(tmp_path)
    (task,) = parse_tasks(path)
    report = build_report(task)
    assert report.error is None and report.base_commit == RIGHT
    assert report.image == task_image_name(task.model_copy(update={"base_commit": RIGHT}))
    assert report.problems == [
        f"task authored__ordinal-teens: base_commit '' is not the commit the image build makes; "
        f"its HEAD is {RIGHT} - set base_commit to that"
    ]
    assert report.FAIL_TO_PASS == bundled().FAIL_TO_PASS and report.PASS_TO_PASS == bundled().PASS_TO_PASS
    f2p = next(t for t in report.tests if t.test == bundled().FAIL_TO_PASS[0])
    assert (f2p.empty, f2p.gold, f2p.role) == ("failed", "passed", "F2P")
    assert report.snippet() == {
        "base_commit": RIGHT,
        "FAIL_TO_PASS": bundled().FAIL_TO_PASS,
        "PASS_TO_PASS": bundled().PASS_TO_PASS,
    }


def test_build_report_says_when_no_test_fails_without_the_gold_patch(base_image, tmp_path):
    # The bug is not injected: every test passes at base_commit, so nothing can be FAIL_TO_PASS.
    row = authored_row(FAIL_TO_PASS=[], PASS_TO_PASS=[], env_spec={"bug_patch": ""}, patch="")
    (task,) = parse_tasks(write_tasks(tmp_path, row))
    report = build_report(task, tests=["test_inflection.py"])
    assert report.error is None and report.FAIL_TO_PASS == [] and len(report.PASS_TO_PASS) == len(report.tests) > 400
    assert any(p.startswith("no test fails without the gold patch and passes with it") for p in report.problems)
