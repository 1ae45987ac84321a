"""SWE-bench 5 rows whose own grading is broken get no verdict, with the reason: an eval script whose test patch
does not apply (the tests would run without the task's tests, judging every patch on the wrong ones) is
`task_error`, for the gold patch as for any other, and `rollgym validate` calls the task invalid."""

from __future__ import annotations

import pytest

from rollgym.envs.swe.grading import grade_patch
from rollgym.envs.swe.images import ensure_task_image
from rollgym.envs.swe.task import TASKS_DIR, parse_task
from rollgym.envs.swe.task_folders import read_task_folders
from rollgym.envs.swe.validate import validate_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def go_row(base_image):
    row = next(r for r in read_task_folders(TASKS_DIR / "swebench") if r["log_parser"] == "parse_log_gotest")
    ensure_task_image(parse_task(row), log=lambda _m: None)
    return row


def test_a_test_patch_that_does_not_apply_is_never_graded(go_row):
    script = go_row["eval_script"]
    assert " package strutil\n" in script  # the test patch's first context line: changed, the hunk cannot apply
    broken = {**go_row, "eval_script": script.replace(" package strutil\n", " package elsewhere\n", 1)}
    task = parse_task(broken)
    res = grade_patch(task, go_row["patch"])
    assert res.status == "task_error" and res.infra_failure and not res.resolved, res
    assert "test patch does not apply" in res.error and "truncate_test.go" in res.error
    [row] = validate_tasks([task])
    assert row.verdict == "invalid" and "test patch does not apply" in row.problem
