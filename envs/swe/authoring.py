"""`rollgym task build`: build a new task's image, then run its tests with the empty patch and with the gold
patch, so its author copies base_commit, FAIL_TO_PASS and PASS_TO_PASS from what ran."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

from rollgym.envs.swe.base_commit import check_image
from rollgym.envs.swe.diffs import diff_paths
from rollgym.envs.swe.errors import WrongBaseCommitError
from rollgym.envs.swe.grading import GradeResult, grade_patch
from rollgym.envs.swe.images import ensure_task_image
from rollgym.envs.swe.task import SWETask
from rollgym.envs.swe.validate import one_line

Role = Literal["F2P", "P2P", ""]


class Outcomes(BaseModel):
    """One test's outcome with the empty patch and with the gold patch."""

    test: str
    empty: str  # passed, failed, error, skipped, ... or "missing" (did not run)
    gold: str

    @computed_field
    @property
    def role(self) -> Role:
        """F2P: fails without the gold patch and passes with it; P2P: passes with both; "" otherwise."""
        if self.gold != "passed":
            return ""
        return "P2P" if self.empty == "passed" else "F2P"


class BuildReport(BaseModel):
    """What `task build` found for one row (`--json` prints one per line)."""

    instance_id: str
    image: str | None = None
    base_commit: str | None = None  # the repository's commit: what the row's base_commit must say
    problems: list[str] = Field(default_factory=list)  # one line each: something in the row to fix
    error: str | None = None  # one line: why the task could not be built or its tests run
    tests: list[Outcomes] = Field(default_factory=list)

    @computed_field
    @property
    def FAIL_TO_PASS(self) -> list[str]:
        return [t.test for t in self.tests if t.role == "F2P"]

    @computed_field
    @property
    def PASS_TO_PASS(self) -> list[str]:
        return [t.test for t in self.tests if t.role == "P2P"]

    def snippet(self) -> dict:
        """The fields to paste into the row."""
        return {"base_commit": self.base_commit, "FAIL_TO_PASS": self.FAIL_TO_PASS, "PASS_TO_PASS": self.PASS_TO_PASS}


def build_report(task: SWETask, tests: list[str] | None = None, log=lambda _m: None) -> BuildReport:
    """Build the task's image (with the repository's own commit if the row's is wrong: that is reported), then run
    `tests` (files or directories; default: what pytest collects in the workdir) without and with the gold patch."""
    report = BuildReport(instance_id=task.instance_id)
    try:
        task = _with_right_commit(task, report, log)
        # The grader runs the files of the F2P/P2P ids: given paths, or none (pytest's own collection).
        runner = task.model_copy(update={"FAIL_TO_PASS": list(tests or []), "PASS_TO_PASS": []})
        empty = grade_patch(runner, "", keep_all_outcomes=True, log=log)
        gold = grade_patch(runner, task.patch, keep_all_outcomes=True, log=log)
    except Exception as exc:  # noqa: BLE001 - image build, Docker, sdist: the task cannot run; say why in one line
        report.error = one_line(f"{type(exc).__name__}: {exc}")
        return report
    _judge(report, empty, gold, task.patch)
    return report


def _with_right_commit(task: SWETask, report: BuildReport, log) -> SWETask:
    """The task with its repository's commit (a wrong one is a problem to fix, not a reason to stop)."""
    try:
        report.image = ensure_task_image(task, log=log)
        if task.image_name:
            check_image(task, report.image)
    except WrongBaseCommitError as exc:
        report.problems.append(str(exc))
        task = task.model_copy(update={"base_commit": exc.head})
        report.image = ensure_task_image(task, log=log)
    report.base_commit = task.base_commit
    return task


def _judge(report: BuildReport, empty: GradeResult, gold: GradeResult, task_patch: str) -> None:
    """The report's problems and per-test outcomes from the two runs."""
    for res, name in ((empty, "empty patch"), (gold, "gold patch")):
        if res.status in ("timeout", "oom", "infra_error"):
            report.error = one_line(f"the tests with the {name} could not run ({res.status}: {res.error})")
        elif res.status != "graded":
            report.problems.append(one_line(f"with the {name}: {res.status}: {res.error}"))
    if gold.status == "graded" and not diff_paths(task_patch) and task_patch.strip():
        report.problems.append(
            "the gold patch has no `diff --git a/... b/...` headers, so grading applies none of it: "
            "write it with `git diff`"
        )
    if gold.dropped_paths:
        report.problems.append(
            f"the gold patch changes test files {gold.dropped_paths}: grading does not apply them; "
            "move those changes to test_patch"
        )
    runs = {**(empty.all_outcomes or {}), **(gold.all_outcomes or {})}
    report.tests = [
        Outcomes(
            test=t, empty=(empty.all_outcomes or {}).get(t, "missing"), gold=(gold.all_outcomes or {}).get(t, "missing")
        )
        for t in sorted(runs)
    ]
    if report.error is None and not report.FAIL_TO_PASS:
        tail = one_line(gold.log_tail.strip().splitlines()[-1] if gold.log_tail.strip() else "no output")
        report.problems.append(
            f"no test fails without the gold patch and passes with it ({len(runs)} tests ran; pytest said: {tail})"
        )
