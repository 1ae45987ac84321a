"""`rollgym validate` on Harbor task folders: `solution/solve.sh` must score 1 and doing nothing must score below 1,
each in a fresh sandbox of the task's image, and each declared MCP server must start (mcp_check.py), with the SWE
tasks' verdicts (valid, invalid, cannot_run)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.harbor.folders import HarborTask, parse_harbor_task
from rollgym.envs.harbor.images import ensure_harbor_image
from rollgym.envs.harbor.mcp_check import servers_that_do_not_start
from rollgym.envs.harbor.sandbox_config import image_workdir, task_sandbox
from rollgym.envs.harbor.verifier import HarborGrade, verify
from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, SandboxError
from rollgym.envs.swe.validate import Verdict, VerdictRow, one_line

SOLUTION_DIR = "/solution"


class HarborValidationRow(VerdictRow):
    """A Harbor task's verdict: solution/solve.sh must score 1, doing nothing below 1."""

    gold: HarborGrade | None = None  # after solution/solve.sh; None: not verified (see setup_error)
    empty: HarborGrade | None = None  # with nothing done
    mcp_not_started: dict[str, str] = {}  # the task's stdio MCP servers that did not start in its sandbox, and why
    mcp_unreachable: dict[str, str] = {}  # its URL MCP servers that could not be reached, and why

    def judge(self) -> tuple[Verdict, str]:
        gold, empty = self.gold, self.empty
        assert gold is not None and empty is not None
        if self.mcp_not_started:
            return "invalid", one_line("; ".join(self.mcp_not_started.values()))
        if self.mcp_unreachable:
            return "cannot_run", one_line("; ".join(self.mcp_unreachable.values()))
        for what, grade in (("the solution", gold), ("doing nothing", empty)):
            if grade.status == "task_error":
                return "invalid", f"{what} could not be verified (task_error: {one_line(grade.error or '')})"
            if grade.status != "graded":
                return "cannot_run", f"{what} could not be verified ({grade.status}: {one_line(grade.error or '')})"
        if gold.reward != 1.0:
            return "invalid", f"the solution scores {gold.reward:g}, not 1 (tests/test.sh: {one_line(gold.log_tail)})"
        if empty.reward is not None and empty.reward >= 1.0:
            return "invalid", f"doing nothing scores {empty.reward:g}: the tests pass without the solution"
        return "valid", ""


def run_solution(sandbox: DockerSandbox, task: HarborTask) -> str | None:
    """Copy solution/ to /solution and run solve.sh (as Harbor's oracle agent does); why it could not, if so."""
    if not (task.solution_dir / "solve.sh").is_file():
        return "solution/solve.sh is missing"
    sandbox.upload_dir(str(task.solution_dir), SOLUTION_DIR)
    timeout = task.config.agent.timeout_sec or 1800.0
    env = {k: str(v) for k, v in (task.config.solution.get("env") or {}).items()} or None
    res = sandbox.exec(f"chmod +x {SOLUTION_DIR}/solve.sh && {SOLUTION_DIR}/solve.sh", timeout=timeout, env=env)
    return f"solution/solve.sh ran over {timeout:g}s" if res.timed_out else None


def verify_fresh(task: HarborTask, image: str, workdir: str, solve: bool) -> HarborGrade:
    """Verify a fresh sandbox of the task, after its solution (`solve`) or after nothing."""
    start = time.monotonic()
    with DockerSandbox(SandboxConfig(**{"image": image, "workdir": workdir, **task_sandbox(task)})) as sandbox:
        failed = run_solution(sandbox, task) if solve else None
        if failed is not None:
            why = "timeout" if "ran over" in failed else "task_error"
            return HarborGrade(task_id=task.task_id, status=why, error=failed, duration_s=time.monotonic() - start)
        return verify(sandbox, task)


def validate_harbor_task(task: HarborTask, log=lambda _m: None) -> HarborValidationRow:
    """The task's image (built or found), then its solution and nothing, each verified in a fresh sandbox."""
    row = HarborValidationRow(instance_id=task.task_id)
    try:
        image = ensure_harbor_image(task, log)
        workdir = task.config.environment.workdir or image_workdir(image)
        not_started, unreachable = servers_that_do_not_start(task, image, workdir)
        gold = verify_fresh(task, image, workdir, solve=True)
        empty = verify_fresh(task, image, workdir, solve=False)
    except (SandboxError, OSError, ImportError) as exc:  # ImportError: servers declared, and no `mcp` SDK
        return row.model_copy(update={"setup_error": one_line(f"{type(exc).__name__}: {exc}")})
    update = {"mcp_not_started": not_started, "mcp_unreachable": unreachable}
    return row.model_copy(update={"gold": gold, "empty": empty, **update})


def validate_harbor_row(row: dict, log=lambda _m: None) -> HarborValidationRow:
    """One row's verdict: a folder rollgym refuses or cannot read is `invalid`, saying why."""
    try:
        task = parse_harbor_task(row)
    except InvalidTaskError as exc:
        return HarborValidationRow(instance_id=task_id_of(row), setup_error=str(exc), setup_invalid=True)
    return validate_harbor_task(task, log)


def validate_harbor_tasks(rows: list[dict], workers: int = 2, log=lambda _m: None) -> list[HarborValidationRow]:
    """Validate task rows, `workers` at a time, in their order."""
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="rollgym-validate") as pool:
        return list(pool.map(lambda r: validate_harbor_row(r, log), rows))
