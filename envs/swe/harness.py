"""Grading an SWE-bench 5 row as the official harness grades it, with the `swebench` package itself (5.0.2): the
agent's patch applied with `run_evaluation`'s commands and fallbacks, the row's own eval script (its test patch, its
runner, its markers, the recorded exit code) run under the task's timeout, and the verdict from
`grading.get_eval_report` on that log: the harness's parsers and resolution rules. rollgym supplies the container
(its sandbox: limits, hosts, leak prevention) and maps the report onto `GradeResult`.

A run in which the tests never reached the runner is not graded: an infrastructure signature in the log (the
harness's own `infra_failure` tiers) is `infra_error`; otherwise the empty patch is run in the same container, and
if it does not run the named tests either the task is broken (`task_error`), else the agent's patch stopped them
(graded, unresolved).
"""

from __future__ import annotations

import functools
import re
import shlex
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from rollgym.envs.swe.diffs import apply_in_turn
from rollgym.errors import UsageError

if TYPE_CHECKING:
    from rollgym.envs.sandbox import DockerSandbox
    from rollgym.envs.swe.grading import GradeResult
    from rollgym.envs.swe.task import SWETask

#: what an SWE-bench 5 row is graded with (the harness release its rows are made for)
SWEBENCH_VERSION = "5.0.2"
EVAL_LOG = "/tmp/rollgym-eval.log"
RESET = "git checkout -- . ; git clean -fd"  # run_instance's reset between two apply attempts
START_TEST_OUTPUT = ">>>>> Start Test Output"  # swebench.harness.constants.START_TEST_OUTPUT


@functools.cache
def harness() -> SimpleNamespace:
    """The `swebench` package's harness modules (imported on first use: about 1 s), or a `UsageError` saying how to
    install them."""
    try:
        from swebench.harness import constants, grading, infra_failure, log_parsers, run_evaluation, utils
    except ImportError as exc:
        raise UsageError(
            f"grading SWE-bench rows needs the official harness: pip install 'rollgym[swebench]' "
            f"(swebench=={SWEBENCH_VERSION}): {exc}"
        ) from exc
    from rollgym.envs.swe.legacy import EXTRA_PARSERS

    for name, parser in EXTRA_PARSERS.items():  # SWE-Gym's parsers that SWE-bench 5 dropped (legacy.py)
        log_parsers.PARSER_REGISTRY.setdefault(name, parser)
    return SimpleNamespace(
        constants=constants, grading=grading, infra=infra_failure, parsers=log_parsers, run=run_evaluation, utils=utils
    )


def parser_names() -> list[str]:
    """The log parsers an SWE-bench 5 row may name (`swebench.harness.log_parsers.PARSER_REGISTRY`)."""
    return sorted(harness().parsers.PARSER_REGISTRY)


def test_spec(task: SWETask) -> Any:
    """The harness's own `TestSpec` of the row (`utils.make_test_spec`): the eval script with its exit code recorded."""
    row = task.model_dump(mode="json")
    row["image"] = task.image
    return harness().utils.make_test_spec(row)


def check_row(task: SWETask) -> None:
    """A row the harness would reject, said in one line: an unknown parser, an eval script without the markers."""
    from rollgym.envs.swe.formats import RowFormatError

    h = harness()
    if task.log_parser not in h.parsers.PARSER_REGISTRY:
        close = [p for p in h.parsers.PARSER_REGISTRY if task.log_parser and task.log_parser.split("_")[-1] in p]
        raise RowFormatError(
            f"task {task.instance_id}: log_parser {task.log_parser!r} is not one of the harness's "
            f"{len(h.parsers.PARSER_REGISTRY)} parsers"
            + (f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else "")
        )
    script = task.eval_script or ""
    missing = [m for m in (h.constants.START_TEST_OUTPUT, h.constants.END_TEST_OUTPUT) if m not in script]
    if missing:
        raise RowFormatError(
            f"task {task.instance_id}: its eval_script never prints {' nor '.join(repr(m) for m in missing)}: the "
            "harness reads the test output between those markers"
        )


def _apply(sb: DockerSandbox, diff: str, workdir: str) -> str | None:
    """The patch applied as `run_instance` applies it (each command in turn, the tree reset between attempts, then
    `--check --reverse` for a patch already in place); None on success, else the last command's output."""
    h = harness()
    path = h.constants.CONTAINER_PATCH_FILE
    sb.write_file(path, diff.encode("utf-8", errors="surrogateescape"))
    output = apply_in_turn(sb, path, h.run.GIT_APPLY_CMDS, workdir, reset=f"/bin/bash -c {shlex.quote(RESET)}")
    if output is None:
        return None
    if sb.exec(f"git apply --check --reverse {path}", cwd=workdir, timeout=120).exit_code == 0:
        return None
    return output[-2000:]


def _run_eval(sb: DockerSandbox, spec: Any, timeout_s: float) -> tuple[str, bool]:
    """The eval script as `run_instance` runs it (`/bin/bash /eval.sh`, stdout and stderr merged in order); the log and
    whether it timed out (the harness's own timeout line then ends the log)."""
    sb.write_file("/eval.sh", spec.eval_script.encode())
    res = sb.exec(f"/bin/bash /eval.sh > {EVAL_LOG} 2>&1", timeout=timeout_s)
    log = sb.read_file(EVAL_LOG, 256 * 2**20).decode("utf-8", errors="replace")
    if res.timed_out:
        log += f"\n\nTimeout error: {timeout_s:g} seconds exceeded."
    return log, res.timed_out


def _report(spec: Any, diff: str, log: str) -> tuple[dict[str, Any], dict[str, str], bool, str | None]:
    """The harness's verdict on `log`: its report, the parsed test statuses, whether the tests ran, and the
    infrastructure signature it finds in the log (when they did not)."""
    h = harness()
    with tempfile.TemporaryDirectory(prefix="rollgym-grade-") as tmp:
        path = Path(tmp) / "test_output.txt"
        path.write_text(log)
        prediction = {"instance_id": spec.instance_id, "model_patch": diff, "model_name_or_path": "rollgym"}
        report = h.grading.get_eval_report(spec, prediction, str(path), include_tests_status=True)[spec.instance_id]
        statuses, found = h.grading.get_logs_eval(spec, str(path))
    signature = None if found else h.infra.classify_text(log)
    return report, statuses, found, (f"{signature[0]} ({signature[1]})" if signature else None)


def grade_in(sb: DockerSandbox, task: SWETask, diff: str, result: GradeResult) -> None:
    """Fill `result` with the official harness's verdict on `diff`, graded in `sb` (a fresh container of the row's
    image)."""
    spec = test_spec(task)
    workdir = task.workdir
    if diff.strip():
        problem = _apply(sb, diff, workdir)
        if problem is not None:
            result.status, result.error = "patch_failed", f"the patch does not apply:\n{problem}"
            return
    log, timed_out = _run_eval(sb, spec, task.test_timeout_s)
    result.log_tail = log[-5000:]
    if timed_out:
        result.status, result.error = "timeout", f"the tests did not finish within {task.test_timeout_s:.0f}s"
        return
    state = sb.status()
    if not state.startswith("running"):
        result.status = "infra_error"
        result.error = f"the test run did not complete (container {state})"
        return
    problem = _test_patch_problem(log)
    if problem:
        result.status = "task_error"
        result.error = f"the eval script's test patch does not apply, so its tests cannot be trusted: {problem}"
        return
    report, statuses, found, infra = _report(spec, diff, log)
    result.exit_code = harness().grading.parse_test_exit_code(log)
    if not found:
        if infra:
            result.status, result.error = "infra_error", f"the eval script never reached its tests: {infra}"
            return
        if diff.strip() and _control_runs_tests(sb, spec, task):
            result.status = "graded"
            result.error = "with this patch the test runner did not report the named tests (it does without it)"
            result.f2p = dict.fromkeys(task.FAIL_TO_PASS, "missing")
            result.p2p = dict.fromkeys(task.PASS_TO_PASS, "missing")
            return
        result.status = "task_error"
        result.error = (
            "the eval script did not run the named tests (no test output between the harness's markers, or none "
            f"its parser {task.log_parser} reads): {log[-300:].strip()}"
        )
        return
    result.status = "graded"
    result.all_outcomes = {t: _outcome(s) for t, s in statuses.items()}
    result.f2p = {t: _outcome(statuses.get(t, "missing")) for t in task.FAIL_TO_PASS}
    result.p2p = {t: _outcome(statuses.get(t, "missing")) for t in task.PASS_TO_PASS}
    result.resolved = bool(report.get("resolved"))


#: what `git apply` (or `patch`) prints when a patch does not apply
_APPLY_FAILED = re.compile(
    r"^(error: (patch failed: .*|corrupt patch at line \d+|.*: patch does not apply|.*: No such file or directory|"
    r"No valid patches in input.*)|Hunk #\d+ FAILED.*)$",
    re.MULTILINE,
)


def _test_patch_problem(log: str) -> str | None:
    """What the eval script's own patching (its test patch, before the tests start) said when it failed, if it did:
    the tests would run without the task's tests, and every patch would be judged on the wrong tests."""
    before = log.split(START_TEST_OUTPUT, 1)[0]
    found = _APPLY_FAILED.findall(before)
    return "; ".join(m[0] for m in found[:3]) if found else None


def _outcome(status: str) -> str:
    """A harness `TestStatus` in rollgym's outcome names (those of the pytest plugin): `XFAIL` is `xfailed`."""
    return {"XFAIL": "xfailed"}.get(status, status.lower())


def _control_runs_tests(sb: DockerSandbox, spec: Any, task: SWETask) -> bool:
    """Whether the eval script runs the named tests without the agent's patch (the tree reset in this container)."""
    sb.exec(f"/bin/bash -c {shlex.quote(RESET)}", cwd=task.workdir, timeout=120)
    log, timed_out = _run_eval(sb, spec, task.test_timeout_s)
    return not timed_out and _report(spec, "", log)[2]


_EXPORT = re.compile(r"^export ([A-Za-z_][A-Za-z0-9_]*)=(['\"]?)([^'\"$`;&|]*)\2\s*$")
_CONDA = re.compile(r"^conda activate (\S+)\s*$")
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def environment_of(eval_script: str) -> dict[str, str]:
    """The environment the row's eval script sets up before its tests (its conda env's activation, its literal
    `export`s such as a locale), so the agent's shell runs the Python and test runner the grader will."""
    env: dict[str, str] = {}
    start = START_TEST_OUTPUT
    for raw in eval_script.splitlines():
        line = raw.strip()
        if start in line:
            break
        if (match := _CONDA.match(line)) is not None:
            prefix = f"/opt/miniconda3/envs/{match.group(1)}" if match.group(1) != "base" else "/opt/miniconda3"
            env.update(
                PATH=f"{prefix}/bin:/opt/miniconda3/condabin:/opt/miniconda3/bin:{_DEFAULT_PATH}",
                CONDA_PREFIX=prefix,
                CONDA_DEFAULT_ENV=match.group(1),
            )
        elif (match := _EXPORT.match(line)) is not None:
            env[match.group(1)] = match.group(3)
    return env
