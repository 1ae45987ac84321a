"""SWE-smith rows, graded as SWE-smith grades them (swesmith 0.0.9, MIT: `harness/utils.py::run_patch_in_container`,
`harness/grading.py`, `profiles/python.py`).

A SWE-smith row is a bug injected into a repository snapshot: `repo` names the snapshot's profile
(`swesmith/<owner>__<repo>.<commit8>`), whose image holds a clone of the profile's mirror (`create_mirror`: the
upstream commit's files as the one commit of a new history, branch `main`; the upstream hash is not in it), and the
row's `patch` is the bug. SWE-smith's agent starts on the task's branch (named by the instance id: the bug committed,
then the FAIL_TO_PASS test files removed); its grader checks out that branch's `HEAD~1` (the bug, tests back), applies
the agent's patch, restores the test files, and runs the profile's test command between markers, reading it with the
profile's parser and its own rules (a skipped test counts neither way). rollgym does the same offline: the task's
branch when the image has it, else the row's bug applied to the mirror's `main` (SWE-smith fetches the branch from
GitHub); the agent's starting state is made as the task's prepared state; the gold patch is the bug reversed.

rollgym's table (`swesmith_profiles.json`, from `.ci/swe-legacy-specs.py`) holds 647 of SWE-smith's 673 profiles:
Python, Go, Rust, Java (Maven, Gradle), JavaScript and TypeScript (jest, mocha, vitest), C++ (CTest, GoogleTest),
each with its parser (`swesmith_parsers.py`) and its rule for naming the test files of its tests. A row of one of the
other 26 (a parser or test command of its own rollgym does not have) is a clear error naming it.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollgym.envs.swe.diffs import apply_in_turn
from rollgym.envs.swe.formats import RowFormatError
from rollgym.envs.swe.swesmith_parsers import PARSERS
from rollgym.envs.swe.swesmith_state import COMMIT, bug_commit

if TYPE_CHECKING:
    from rollgym.envs.sandbox import DockerSandbox
    from rollgym.envs.swe.grading import GradeResult
    from rollgym.envs.swe.task import SWETask

PROFILES_PATH = Path(__file__).with_name("swesmith_profiles.json")
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
#: SWE-smith's patch commands, in order (`harness/utils.py`: GIT_APPLY_CMDS)
APPLY_COMMANDS = ("git apply --verbose", "git apply --verbose --reject", "patch --batch --fuzz=5 -p1 -i")
#: the conda env SWE-smith's Python images test in
PATH = (
    "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)


@functools.cache
def table() -> dict[str, Any]:
    return json.loads(PROFILES_PATH.read_text())


def profile_for(row: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The row's profile (by `repo`, `swesmith/<name>`, else the instance id's `<name>.` prefix), or `RowFormatError`."""
    name = str(row.get("repo") or "").removeprefix("swesmith/") or str(row.get("instance_id", "")).rsplit(".", 1)[0]
    data = table()
    if name in data["profiles"]:
        return name, data["profiles"][name]
    why = data["unsupported"].get(name)
    rid = row.get("instance_id", "?")
    if why:
        raise RowFormatError(f"task {rid}: SWE-smith profile {name} is a {why}: rollgym cannot grade its rows yet")
    raise RowFormatError(
        f"task {rid}: {name!r} is not one of the {len(data['profiles'])} SWE-smith profiles rollgym has "
        f"(swesmith 0.0.9; give `repo` as swesmith/<owner>__<repo>.<commit8>)"
    )


def reverse_patch(patch: str) -> str:
    """`patch` undone, as a patch: each file's sides swapped, each hunk's ranges and lines."""
    out = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("--- "):
            minus = line
            continue
        if line.startswith("+++ "):
            out.append("--- " + line[4:].replace("b/", "a/", 1) if line[4:].startswith("b/") else "--- " + line[4:])
            out.append("+++ " + minus[4:].replace("a/", "b/", 1) if minus[4:].startswith("a/") else "+++ " + minus[4:])
            continue
        if match := re.match(r"^@@ -(\S+) \+(\S+) @@(.*)$", line, re.DOTALL):
            out.append(f"@@ -{match.group(2)} +{match.group(1)} @@{match.group(3)}")
        elif line.startswith("new file mode"):
            out.append(line.replace("new file mode", "deleted file mode", 1))
        elif line.startswith("deleted file mode"):
            out.append(line.replace("deleted file mode", "new file mode", 1))
        elif match := re.match(r"^index (\w+)\.\.(\w+)(.*)$", line, re.DOTALL):
            out.append(f"index {match.group(2)}..{match.group(1)}{match.group(3)}")
        elif line.startswith("-") and not line.startswith("--- "):
            out.append("+" + line[1:])
        elif line.startswith("+") and not line.startswith("+++ "):
            out.append("-" + line[1:])
        else:
            out.append(line)
    return "".join(out)


def test_files(task: SWETask) -> tuple[list[str], list[str]]:
    """The FAIL_TO_PASS and PASS_TO_PASS test files, by the profile's rule (`get_test_files`): pytest ids' files,
    mido's without `../dev/`, python-slugify's `test.py`, tornado's unittest ids' modules; none for profiles that name
    none. (Go's are found in the repository: `go_test_files`.)"""
    rule = _extra(task, "swesmith_test_files")

    def files(tests: list[str]) -> list[str]:
        if rule == "test.py":
            return ["test.py"]
        if rule == "unittest-ids":
            found = (re.search(r"\s\((.*)\)", t) for t in tests)
            return sorted({"/".join(m.group(1).split(".")[:-1]) + ".py" for m in found if m})
        if rule in ("python", "python-dev-prefix"):
            named = {t.split("::", 1)[0] for t in tests}
            return sorted({n.removeprefix("../dev/") for n in named} if rule == "python-dev-prefix" else named)
        return []

    return files(task.FAIL_TO_PASS), files(task.PASS_TO_PASS)


def go_test_files(tests: list[str]) -> str:
    """A shell command printing the `_test.go` files (git-tracked) that define one of `tests` as a top-level `func`,
    as `GoProfile.get_test_files` finds them (subtests and methods name no file)."""
    names = sorted({t for t in tests if re.fullmatch(r"\w+", t)})
    if not names:
        return "true"
    pattern = shlex.quote(rf"^[[:space:]]*func[[:space:]]+({'|'.join(names)})\b")
    return f"git ls-files -z -- '*_test.go' | xargs -0 -r grep -lE {pattern} --"


def as_task_row(row: dict[str, Any]) -> dict[str, Any]:
    """A SWE-smith row as an SWE task row: the profile's image and commit, the bug (kept as `bug_patch`), the gold
    patch (the bug reversed), the profile's test command and timeout."""
    name, profile = profile_for(row)
    if not str(row.get("patch") or "").strip():
        raise RowFormatError(f"task {row.get('instance_id', '?')}: a SWE-smith row needs its bug as `patch`")
    return {
        **row,
        "repo": f"swesmith/{name}",
        "base_commit": row.get("base_commit") or "",  # none: the mirror's `main` (`bug_commit`)
        "bug_patch": row["patch"],
        "patch": reverse_patch(row["patch"]),
        "image": row.get("image_name") or profile["image"],
        "test_timeout_s": float(profile["timeout"]),
        "swesmith_test_cmd": profile["test_cmd"],
        "swesmith_min_testing": profile["min_testing"],
        "swesmith_parser": profile["parser"],
        "swesmith_test_files": profile["test_files"],
        "swesmith_language": profile["language"],
    }


#: what a task read before these columns existed (Python profiles only) stands for
_BEFORE = {
    "swesmith_parser": "PythonProfile.log_parser",
    "swesmith_test_files": "python",
    "swesmith_language": "python",
}


def _extra(task: SWETask, key: str) -> Any:
    extra = task.model_extra or {}
    return extra[key] if key in extra else _BEFORE[key]


def language(task: SWETask) -> str:
    """The profile's language (`python`, `go`, `rust`, `java`, `javascript`, `typescript`, `cpp`)."""
    return str(_extra(task, "swesmith_language"))


def bug_state(task: SWETask, for_agent: bool) -> str:
    """The commands that make the task's state in the snapshot: its bug commit (`bug_commit`); for the agent, the
    FAIL_TO_PASS test files removed too ("Remove F2P Tests") and the state committed as the only commit of a new
    branch, so no history shows the bug being made (SWE-smith's branch does)."""
    steps = [f"{{ {bug_commit(task, _extra(task, 'bug_patch'))}; }}"]
    f2p, _ = test_files(task)
    if for_agent:
        if _extra(task, "swesmith_test_files") == "go":
            steps.append(f"{{ {go_test_files(task.FAIL_TO_PASS)}; }} | xargs -r -d '\\n' rm -f --")
        elif f2p:
            steps.append(f"rm -f -- {' '.join(map(shlex.quote, f2p))}")
        steps += ["git checkout -q --orphan rollgym-task", "git add -A", COMMIT.format(message="task")]
    return " && ".join(steps)


def test_command(task: SWETask) -> str:
    """The profile's test command (`RepoProfile.get_test_cmd`): its test files appended when it tests minimally."""
    command = _extra(task, "swesmith_test_cmd")
    if _extra(task, "swesmith_min_testing"):
        f2p, p2p = test_files(task)
        if f2p + p2p:
            command += f" {' '.join(f2p + p2p)}"
    return command


def parse_log(log: str, parser: str = "PythonProfile.log_parser") -> dict[str, str]:
    """The statuses the profile's parser (`swesmith_parsers.PARSERS`) reads in `log`."""
    return PARSERS[parser](log)


def read_test_output(log: str) -> str | None:
    """The test output between SWE-smith's markers in their xtrace form (`harness/grading.py::read_test_output`);
    None when they are missing (echoed markers do not count)."""
    start_sep, end_sep = f"+ : '{START}'", f"+ : '{END}'"
    if START not in log or END not in log or start_sep not in log or end_sep not in log:
        return None
    return log[log.find(start_sep) : log.find(end_sep)][len(start_sep) :]


def verdict(statuses: dict[str, str], f2p: list[str], p2p: list[str]) -> tuple[dict, dict, bool]:
    """SWE-smith's report: a test passes when PASSED or XFAIL, fails when missing, FAILED or ERROR; a SKIPPED test
    counts neither way; resolved when every counted FAIL_TO_PASS and PASS_TO_PASS test passes."""

    def outcome(test: str) -> str:  # rollgym's outcome names (the pytest plugin's): XFAIL is xfailed
        return {"XFAIL": "xfailed"}.get(statuses[test], statuses[test].lower()) if test in statuses else "missing"

    f2p_out, p2p_out = {t: outcome(t) for t in f2p}, {t: outcome(t) for t in p2p}
    counted = [o for o in (*f2p_out.values(), *p2p_out.values()) if o != "skipped"]
    return f2p_out, p2p_out, all(o in ("passed", "xfailed") for o in counted)


def _run(sb: DockerSandbox, task: SWETask) -> tuple[Any, str | None, dict[str, str]]:
    """The eval script as SWE-smith runs it (stdout and stderr merged), what lies between its markers, and the
    statuses its parser reads there."""
    res = sb.exec("/bin/bash /eval.sh", timeout=task.test_timeout_s, max_output=64 * 2**20)
    output = read_test_output(res.output)
    parser = _extra(task, "swesmith_parser")
    return res, output, (parse_log(output, parser) if output is not None else {})


def grade_in(sb: DockerSandbox, task: SWETask, diff: str, result: GradeResult) -> None:
    """Fill `result` with SWE-smith's verdict on `diff` (made on the agent's state), graded in `sb` (a fresh container
    of the profile's image)."""
    workdir = task.workdir
    state = sb.exec(bug_state(task, for_agent=False), cwd=workdir, timeout=300)
    if state.exit_code != 0:
        result.status, result.error = (
            "task_error",
            f"the row's bug does not apply to its snapshot: {state.output[-500:]}",
        )
        return
    f2p_files, p2p_files = test_files(task)
    if _extra(task, "swesmith_test_files") == "go":  # found before the patch, as SWE-smith finds them in its clone
        found = sb.exec(go_test_files([*task.FAIL_TO_PASS, *task.PASS_TO_PASS]), cwd=workdir, timeout=120)
        p2p_files = sorted(set(found.output.split("\n")) - {""})
    if diff.strip():
        sb.write_file("/tmp/patch.diff", diff.encode("utf-8", errors="surrogateescape"))
        output = apply_in_turn(sb, "/tmp/patch.diff", APPLY_COMMANDS, workdir)  # no reset between attempts
        if output is not None:
            result.status, result.error = "patch_failed", f"the patch does not apply:\n{output[-2000:]}"
            return
        if f2p_files + p2p_files:  # changes to the tests are the agent's, not graded
            sb.exec(f"git checkout -- {' '.join(map(shlex.quote, f2p_files + p2p_files))}", cwd=workdir, timeout=120)
    script = "\n".join(
        ["#!/bin/bash", "set -uxo pipefail", f"cd {workdir}", f": '{START}'", test_command(task), f": '{END}'"]
    )
    sb.write_file("/eval.sh", (script + "\n").encode())
    res, output, statuses = _run(sb, task)
    result.log_tail, result.exit_code = res.output[-5000:], res.exit_code
    if res.timed_out:
        result.status, result.error = "timeout", f"the tests did not finish within {task.test_timeout_s:.0f}s"
        return
    named = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    if not any(t in statuses for t in named):
        if diff.strip():
            sb.exec("git checkout -- . ; git clean -fd", cwd=workdir, timeout=120)
            control = _run(sb, task)[2]
            if any(t in control for t in named):  # they run without the patch: the patch stopped them
                result.status = "graded"
                result.error = "with this patch the test command reported none of the named tests (it does without)"
                result.f2p, result.p2p, result.resolved = verdict({}, task.FAIL_TO_PASS, task.PASS_TO_PASS)
                return
        result.status = "task_error"
        result.error = (
            "the test command reported none of the named tests"
            + (" (no test output between the markers)" if output is None else f" ({len(statuses)} others)")
            + f": {res.output[-300:].strip()}"
        )
        return
    result.status = "graded"
    result.all_outcomes = {t: {"XFAIL": "xfailed"}.get(s, s.lower()) for t, s in statuses.items()}
    result.f2p, result.p2p, result.resolved = verdict(statuses, task.FAIL_TO_PASS, task.PASS_TO_PASS)
