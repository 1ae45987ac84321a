"""R2E-Gym rows, graded as R2E-Gym grades them (R2E-Gym/R2E-Gym, Apache-2.0: `agenthub/runtime/docker.py`,
`repo_analysis/execution_log_parser.py`, read at commit 69bc953).

A row names an image checked out at the commit before a fix (`docker_image`), the fix commit
(`parsed_commit_content`, with every changed file's old and new content), and the hidden tests' expected outcome at
the fix (`expected_output_json`: the parser's map of test to status). R2E-Gym's environment moves the hidden tests
(`/r2e_tests`) and their runner (`run_tests.sh`) out of the repository into `/root`, links them back, and its reward
is 1 only when running them gives **exactly** the expected map, tests expected to fail included.

rollgym does the same in the agent's sandbox (as its prepared state, with the repository pinned and later history
hidden as for every prebuilt image) and in a fresh grading container, with the agent's diff applied. The gold patch
is the fix commit's Python files (as R2E-Gym's `ParsedCommit.get_patch(only_python=True)`), written from their old
and new contents. R2E-Gym's `uv pip install chardet` at setup is tried as R2E-Gym tries it (a failure only
logged): offline, it does nothing unless the image can install it. The SWE-bench rows R2E-Gym republishes
(`R2E-Gym/SWE-Bench-*`) are SWE-bench rows (formats.py).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import TYPE_CHECKING, Any

from rollgym.envs.swe.formats import RowFormatError

if TYPE_CHECKING:
    from rollgym.envs.sandbox import DockerSandbox
    from rollgym.envs.swe.grading import GradeResult
    from rollgym.envs.swe.task import SWETask

#: R2E-Gym's command PATH (agenthub `DOCKER_PATH`): the repository's venv first, through the links setup makes
PATH = "/root/.venv/bin:/root/.local/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: R2E-Gym's `setup_env` for its own images (`uv pip install chardet` tried, as R2E-Gym does): the hidden tests and their runner moved
#: to /root and linked back, caches removed; and (rollgym) those paths kept out of the agent's diff
SETUP = (
    "mkdir -p /root/.local/bin && ln -sfn /testbed/.venv /root/.venv "
    "&& ln -sf /testbed/.venv/bin/python /root/.local/bin/python && ln -sf /testbed/.venv/bin/python /root/.local/bin/python3 "
    "&& find /testbed/.venv/bin -type f -executable -exec ln -sf {} /root/.local/bin/ \\; ; "
    "cd /testbed && { command -v uv >/dev/null && timeout 30 uv pip install -q chardet >/dev/null 2>&1; true; } && "
    "find . -name '*.pyc' -delete; find . -name '__pycache__' -exec rm -rf {} + 2>/dev/null; "
    "if [ -d /r2e_tests ]; then find /r2e_tests -name '*.pyc' -delete; "
    "find /r2e_tests -name '__pycache__' -exec rm -rf {} + 2>/dev/null; fi; "
    "for f in run_tests.sh r2e_tests; do if [ -e /testbed/$f ] && [ ! -L /testbed/$f ]; then mv /testbed/$f /root/$f; fi; "
    "done; if [ -d /r2e_tests ]; then rm -rf /root/r2e_tests && mv /r2e_tests /root/r2e_tests; fi; "
    "ln -sfn /root/r2e_tests /testbed/r2e_tests "
    "&& printf 'r2e_tests\\n.venv\\nrun_tests.sh\\ninstall.sh\\n.pytest_cache/\\n__pycache__/\\n' >> /testbed/.git/info/exclude "
    "&& test -f /root/run_tests.sh && test -d /root/r2e_tests"
)
RUN_TESTS = "bash /root/run_tests.sh"
TIMEOUT_S = 300.0  # R2E-Gym's test timeout
_COLOR = re.compile(r"\x1b\[[0-9;]*m|\r")
_KEY_COLOR = re.compile(r"\x1b\[\d+m")  # what R2E-Gym's decolor_dict_keys removes (a single number only)


def issue_text(problem: str) -> str:
    """The issue R2E-Gym shows the agent: the text inside `[ISSUE]...[/ISSUE]` if there is one, else all of it."""
    match = re.search(r"\[ISSUE\](.*)\[/ISSUE\]", problem, re.DOTALL)
    return match.group(1).strip() if match else problem


def gold_patch(parsed: dict[str, Any]) -> str:
    """The fix commit's Python files as a `git diff`, from each file's old and new content."""
    out = []
    for fd in parsed.get("file_diffs", []):
        path = fd["header"]["file"]["path"]
        if not path.endswith(".py") or fd.get("is_binary_file"):
            continue
        old, new = fd.get("old_file_content") or "", fd.get("new_file_content") or ""
        a, b = (f"a/{path}" if old else "/dev/null"), (f"b/{path}" if new else "/dev/null")
        lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b)
        body = "".join(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines)
        if not body:
            continue
        mode = "new file mode 100644\n" if not old else "deleted file mode 100644\n" if not new else ""
        out.append(f"diff --git a/{path} b/{path}\n{mode}{body}")
    return "".join(out)


def parse_log(log: str | None) -> dict[str, str]:
    """R2E-Gym's `parse_log_pytest`: the lines after pytest's `short test summary info`; a line containing PASSED,
    FAILED or ERROR (checked in that order, anywhere in the line) names its test by what follows the file's `::`
    (`Class.test`), cut at ` - ` for failures and errors. XFAIL, XPASS and SKIPPED lines are not read."""
    if not log or "short test summary info" not in log:
        return {}
    found: dict[str, str] = {}
    for line in log.split("short test summary info")[1].strip().split("\n"):
        name = ".".join(line.split("::")[1:])
        if "PASSED" in line:
            found[name] = "PASSED"
        elif "FAILED" in line:
            found[name.split(" - ")[0]] = "FAILED"
        elif "ERROR" in line:
            found[name.split(" - ")[0]] = "ERROR"
    return found


def normalized(statuses: dict[str, str]) -> dict[str, str]:
    """R2E-Gym's reward normalisation: colour codes out of the keys, each key cut at ` - `."""
    clean = {_KEY_COLOR.sub("", k): v for k, v in statuses.items()}
    return {k.split(" - ")[0]: clean[k] for k in sorted(clean)}


def matches(parsed: dict[str, str], expected: dict[str, str]) -> bool:
    """R2E-Gym's reward (its fixed form, commit eaa9f6c): the same number of tests and, for each parsed test with a
    name, the expected status."""
    if len(parsed) != len(expected):
        return False
    return all(k in expected and parsed[k] == expected[k] for k in parsed if k)


def as_task_row(row: dict[str, Any]) -> dict[str, Any]:
    """An R2E-Gym row as an SWE task row: its image, the commit before the fix, the gold patch, the hidden tests
    expected to pass as FAIL_TO_PASS (the rest of the expected map is graded too: `expected_output_json`)."""
    name = f"{row.get('repo_name', '?')}@{str(row.get('commit_hash', '?'))[:12]}"
    try:
        parsed = json.loads(row["parsed_commit_content"]) if isinstance(row.get("parsed_commit_content"), str) else {}
        expected = normalized(json.loads(row["expected_output_json"]))
    except (KeyError, json.JSONDecodeError) as exc:
        raise RowFormatError(
            f"R2E-Gym row {name}: parsed_commit_content or expected_output_json is not JSON: {exc}"
        ) from None
    if not parsed.get("old_commit_hash"):
        raise RowFormatError(f"R2E-Gym row {name}: parsed_commit_content has no old_commit_hash (the base commit)")
    if not expected:
        raise RowFormatError(f"R2E-Gym row {name}: expected_output_json names no test")
    return {
        **row,
        "instance_id": row.get("instance_id") or f"r2e__{row['repo_name']}-{str(row['commit_hash'])[:12]}",
        "repo": row["repo_name"],
        "base_commit": parsed["old_commit_hash"],
        "problem_statement": issue_text(str(row.get("problem_statement") or "")),
        "patch": gold_patch(parsed),
        "test_patch": "",
        "FAIL_TO_PASS": [k for k, v in expected.items() if v == "PASSED"],
        "PASS_TO_PASS": [],
        "image": row["docker_image"],
        "test_timeout_s": TIMEOUT_S,
    }


def expected_of(task: SWETask) -> dict[str, str]:
    return normalized(json.loads((task.model_extra or {})["expected_output_json"]))


def run_tests(sb: DockerSandbox, timeout_s: float) -> tuple[str, bool]:
    """The hidden tests as R2E-Gym runs them: its runner, in /testbed, with its PATH; colour and carriage returns
    removed when they pass (as R2E-Gym does, only then)."""
    res = sb.exec(RUN_TESTS, timeout=timeout_s, cwd="/testbed", env={"PATH": PATH}, max_output=32 * 2**20)
    out = res.output
    return (_COLOR.sub("", out) if res.exit_code == 0 else out), res.timed_out


def grade_in(sb: DockerSandbox, task: SWETask, diff: str, result: GradeResult) -> None:
    """Fill `result` with R2E-Gym's verdict on `diff`, graded in `sb` (a fresh container of the row's image)."""
    from rollgym.envs.swe.grading import apply_patch

    setup = sb.exec(SETUP, timeout=300, env={"PATH": PATH})
    if setup.exit_code != 0:
        result.status, result.error = "task_error", f"R2E-Gym's setup failed in the image: {setup.output[-500:]}"
        return
    if diff.strip():
        problem = apply_patch(sb, diff, "agent")
        if problem is not None:
            result.status, result.error = "patch_failed", f"the patch does not apply:\n{problem}"
            return
    expected = expected_of(task)
    log, timed_out = run_tests(sb, task.test_timeout_s)
    result.log_tail = log[-5000:]
    if timed_out:
        result.status, result.error = "timeout", f"the tests did not finish within {task.test_timeout_s:.0f}s"
        return
    parsed = normalized(parse_log(log))
    if not parsed:
        if diff.strip():
            sb.exec("git checkout -- . ; git clean -fd", cwd="/testbed", timeout=120)
            control, _ = run_tests(sb, task.test_timeout_s)
            if parse_log(control):  # the tests run without the patch: the patch stopped them
                result.status, result.error = "graded", "with this patch the tests reported nothing (they do without)"
                result.f2p = dict.fromkeys(task.FAIL_TO_PASS, "missing")
                return
        result.status = "task_error"
        result.error = f"the hidden tests reported nothing (no pytest summary): {log[-300:].strip()}"
        return
    result.status = "graded"
    result.all_outcomes = {k: v.lower() for k, v in parsed.items()}
    result.f2p = {t: parsed.get(t, "missing").lower() for t in task.FAIL_TO_PASS}
    result.resolved = matches(parsed, expected)
    if not result.resolved:
        wrong = [k for k in sorted(set(parsed) | set(expected)) if parsed.get(k) != expected.get(k)]
        result.error = f"{len(wrong)} tests differ from the expected outcome, e.g. {wrong[:3]}"
