"""`rollgym validate`: each task's gold patch must resolve it and the empty patch must not. A task that could
not be checked at all (its image does not build, Docker fails, its sdist is missing) is told apart from an
invalid one, and a run interrupted in the main thread removes every grading container its workers started."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Literal

from pydantic import BaseModel, computed_field

from rollgym.envs.sandbox import SandboxGroup
from rollgym.envs.swe.base_commit import check_image
from rollgym.envs.swe.errors import WrongBaseCommitError
from rollgym.envs.swe.grading import F2P_SUCCESS, P2P_SUCCESS, GradeResult, grade_patch
from rollgym.envs.swe.images import ensure_task_image
from rollgym.envs.swe.task import SWETask

Verdict = Literal["valid", "invalid", "cannot_run"]


class VerdictRow(BaseModel):
    """One task's verdict, as `rollgym validate --json` prints it (one per line), for any kind of task: `judge`
    says it from the two grades (the task's own answer, and nothing done) unless the task could not be set up."""

    instance_id: str
    setup_error: str | None = None  # one line: why the task could not be graded
    setup_invalid: bool = False  # that error is the task's own (a wrong base_commit, a refused folder)

    @computed_field
    @property
    def verdict(self) -> Verdict:
        """valid; invalid (the task is wrong: fix it); cannot_run (it could not be checked: build, Docker, sdist)."""
        return self._verdict()[0]

    @computed_field
    @property
    def problem(self) -> str:
        """What is wrong, in one line ("" when valid)."""
        return self._verdict()[1]

    @property
    def ok(self) -> bool:
        return self.verdict == "valid"

    def _verdict(self) -> tuple[Verdict, str]:
        if self.setup_error is not None:
            return ("invalid" if self.setup_invalid else "cannot_run"), self.setup_error
        return self.judge()

    def judge(self) -> tuple[Verdict, str]:
        """The verdict from the grades (both present once setup succeeded)."""
        raise NotImplementedError


class ValidationRow(VerdictRow):
    """A SWE task's verdict: its gold patch must resolve it, the empty patch must not."""

    f2p_total: int = 0
    gold: GradeResult | None = None  # None: not graded (see setup_error)
    empty: GradeResult | None = None

    @computed_field
    @property
    def f2p_failing_without_patch(self) -> int | None:
        """How many FAIL_TO_PASS tests the empty patch does not pass (all of them, in a valid task)."""
        if self.empty is None or self.empty.status != "graded":
            return None
        return sum(o not in F2P_SUCCESS for o in self.empty.f2p.values())

    def judge(self) -> tuple[Verdict, str]:
        gold, empty = self.gold, self.empty
        assert gold is not None and empty is not None
        if gold.status in ("graded", "patch_failed", "task_error") and not gold.resolved:
            return "invalid", f"gold patch not resolved ({gold.status}: {one_line(gold.error or _failing(gold))})"
        if not gold.resolved:
            return "cannot_run", f"gold patch could not be graded ({gold.status}: {one_line(gold.error or '')})"
        if empty.status == "graded" and empty.resolved:
            return "invalid", "the empty patch resolves the task (F2P tests do not fail at base_commit)"
        if empty.status != "graded":
            kind = "invalid" if empty.status == "task_error" else "cannot_run"
            return kind, f"empty patch could not be graded ({empty.status}: {one_line(empty.error or '')})"
        return "valid", ""


def _failing(res: GradeResult) -> str:
    bad = [t for t, o in res.f2p.items() if o not in F2P_SUCCESS] + [
        t for t, o in res.p2p.items() if o not in P2P_SUCCESS
    ]
    return f"{len(bad)} tests not passing, e.g. {bad[:3]}"


def one_line(text: str, limit: int = 400) -> str:
    """A message's first line, and its last when it has more (a build log's end says what failed), capped."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    out = lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"
    return out if len(out) <= limit else out[: limit - 3] + "..."


def prepare(task: SWETask, log=lambda _m: None) -> ValidationRow | None:
    """Build (or find) the task's image and check its base_commit; the verdict of a task that cannot be graded."""
    row = ValidationRow(instance_id=task.instance_id, f2p_total=len(task.FAIL_TO_PASS))
    try:
        image = ensure_task_image(task, log=log)
        if task.image_name or task.image:  # an image rollgym built from an sdist was checked by its build
            check_image(task, image)
    except WrongBaseCommitError as exc:
        return row.model_copy(update={"setup_error": str(exc), "setup_invalid": True})
    except Exception as exc:  # noqa: BLE001 - image build, Docker, sdist: this task cannot run; say why in one line
        return row.model_copy(update={"setup_error": one_line(f"{type(exc).__name__}: {exc}")})
    return None


def validate_task(task: SWETask) -> ValidationRow:
    """Grade the gold and the empty patch (the task's image must exist: see `prepare`)."""
    row = ValidationRow(instance_id=task.instance_id, f2p_total=len(task.FAIL_TO_PASS))
    try:
        return row.model_copy(update={"gold": grade_patch(task, task.patch), "empty": grade_patch(task, "")})
    except Exception as exc:  # noqa: BLE001 - one task's failure is its verdict, not the end of the run
        return row.model_copy(update={"setup_error": one_line(f"{type(exc).__name__}: {exc}")})


def validate_tasks(tasks: list[SWETask], workers: int = 2, log=lambda _m: None) -> list[ValidationRow]:
    """Validate tasks in parallel (images are built first, one at a time). Interrupted in the main thread
    (Ctrl-C, or SIGTERM turned into an exception), it removes its workers' containers before leaving."""
    rows: dict[int, ValidationRow] = {}
    todo = []
    for i, task in enumerate(tasks):
        failed = prepare(task, log)
        if failed is None:
            todo.append((i, task))
        else:
            rows[i] = failed
    group = SandboxGroup()

    def run(task: SWETask) -> ValidationRow:
        with group.collecting():
            return validate_task(task)

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="rollgym-validate")
    futures: dict[int, Future] = {i: pool.submit(run, task) for i, task in todo}
    try:
        for i, future in futures.items():
            rows[i] = future.result()
    except BaseException:
        for future in futures.values():
            future.cancel()
        group.stop()  # running tests fail at once; a sandbox created from now on is removed as it registers
        wait(futures.values())
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [rows[i] for i in range(len(tasks))]
