"""A SWE-smith row of another language, end to end: a Go profile (swesmith 0.0.9's `GoProfile`: `go test -v ./...`,
its parser, test files found by the `func TestX` that defines each test), on an image shaped as that profile's
snapshot (rollgym's Go task repository, built offline with Debian's golang, as the upstream; then laid out as
SWE-smith lays out its images: support/swesmith.py). The agent starts on the bug with the
file that defines the FAIL_TO_PASS tests removed; the gold patch resolves; and rollgym's verdict equals SWE-smith's
own harness's on gold, empty, a fix that breaks a PASS_TO_PASS test, and fake pass lines."""

from __future__ import annotations

import difflib
import json

import gymnasium
import pytest

import rollgym.envs  # noqa: F401 - registers rollgym/SWE-v0
from rollgym.envs.swe.swesmith import table
from rollgym.envs.swe.task import TASKS_DIR, parse_task
from rollgym.envs.swe.task_folders import read_task_folders

pytestmark = [pytest.mark.docker, pytest.mark.slow]
GO_TASK = TASKS_DIR / "swebench" / "tasks" / "rollgym__go-strutil-1"
PROFILE = "gosuri__uiprogress.484b9f69"  # a real Go profile (swesmith 0.0.9); the image stands in for its snapshot
F2P = ["TestTruncate", "TestTruncate/longer", "TestTruncateWithSuffix", "TestTruncateWithSuffix/cut"]
P2P = ["TestPadLeft", "TestToSnake", "TestLines"]
SOURCE = (GO_TASK / "src" / "truncate.go").read_text()
BUGGED = SOURCE.replace("return s[:n]", "return s[1:n]")
FAKE = (
    'package strutil\n\nimport "os"\n\nfunc init() {\n'
    + "".join(f'\tos.Stdout.WriteString("--- PASS: {t} (0.00s)\\n")\n' for t in F2P)
    + "}\n"
)


def _diff(path: str, before: str, after: str) -> str:
    old = before.splitlines(True)
    body = "".join(difflib.unified_diff(old, after.splitlines(True), f"a/{path}", f"b/{path}"))
    if not before:
        body = body.replace(f"--- a/{path}", "--- /dev/null", 1)
        return f"diff --git a/{path} b/{path}\nnew file mode 100644\n{body}"
    return f"diff --git a/{path} b/{path}\n{body}"


def _row(**extra) -> dict:
    return {
        "instance_id": f"{PROFILE}.func_pm_op_change__go1",
        "repo": f"swesmith/{PROFILE}",
        "patch": _diff("truncate.go", SOURCE, BUGGED),
        "FAIL_TO_PASS": F2P,
        "PASS_TO_PASS": P2P,
        "image_name": table()["profiles"][PROFILE]["image"],
        "problem_statement": "Truncate drops the first character of a long string.",
        **extra,
    }


@pytest.fixture(scope="module")
def go_row() -> dict:
    """A row in SWE-smith's own schema (no base_commit) on its image laid out as SWE-smith lays it out, from rollgym's
    Go task image as the upstream (support/swesmith.py)."""
    from support.swesmith import mirror_image

    from rollgym.envs.swe.images import ensure_task_image

    upstream = ensure_task_image(parse_task(read_task_folders(GO_TASK)[0]), log=lambda _m: None)
    mirror_image(upstream, _row(), ["truncate_test.go"])
    return _row()


def test_a_go_row_reads_its_profile():
    task = parse_task(_row(base_commit="b" * 40))
    extra = task.model_extra or {}
    assert task.grader == "swesmith" and extra["swesmith_language"] == "go"
    assert extra["swesmith_parser"] == "GoProfile.log_parser" and extra["swesmith_test_cmd"] == "go test -v ./..."
    assert task.default_sandbox() == {}  # the image's own environment (its Go), not a conda PATH


def test_an_episode_starts_on_the_bug_without_the_f2p_tests_file(go_row):
    env = gymnasium.make("rollgym/SWE-v0")

    def step(name: str, arguments: dict, call_id: str):
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        return env.step({"role": "assistant", "content": None, "tool_calls": [call]})

    try:
        env.reset(options={"task": go_row})
        obs, *_ = step("bash", {"command": "ls; git log --all --oneline | wc -l; go version"}, "c1")
        listing = obs[0]["content"]
        assert "truncate_test.go" not in listing and "pad_test.go" in listing and "go version go1" in listing, listing
        step("bash", {"command": "sed -i 's/s\\[1:n\\]/s[:n]/' truncate.go"}, "c2")
        obs, reward, term, _trunc, info = step("submit", {}, "c3")
        assert term and reward == 1.0 and info["grade"]["status"] == "graded", info["grade"]
    finally:
        env.close()


def test_rollgyms_verdict_on_a_go_row_is_swe_smiths_own(go_row, tmp_path, capsys):
    from support.swesmith import python, swesmith_resolved

    from rollgym.envs.swe.grading import grade_patch

    if python() is None:
        pytest.skip("SWE-smith's harness venv is missing (.ci/harnesses-up failed: see its output)")
    task = parse_task(go_row)
    pad = (GO_TASK / "src" / "pad.go").read_text()
    assert "func PadLeft(" in pad
    broken_pad = pad.replace("func PadLeft(", "func PadLeft(s string, n int, c rune) string { return s }\n\nfunc old(")
    patches = {
        "gold": task.patch,
        "empty": "",
        "breaks_p2p": task.patch + _diff("pad.go", pad, broken_pad),
        "fake_pass": _diff("fake.go", "", FAKE),
    }
    expected = {"gold": True, "empty": False, "breaks_p2p": False, "fake_pass": False}
    mirror = tmp_path / "mirror"  # the repository at the snapshot's commit, as SWE-smith's clone of its mirror
    mirror.mkdir()
    for path in (GO_TASK / "src").rglob("*"):
        if path.is_file():
            (mirror / path.relative_to(GO_TASK / "src")).parent.mkdir(parents=True, exist_ok=True)
            (mirror / path.relative_to(GO_TASK / "src")).write_bytes(path.read_bytes())
    instance = {k: v for k, v in go_row.items() if k != "image_name"}
    lines = []
    for kind, patch in patches.items():
        ours = grade_patch(task, patch)
        theirs = swesmith_resolved(instance, patch, tmp_path, clone_from=mirror)
        assert ours.status == "graded" and ours.resolved == theirs == expected[kind], (kind, ours, theirs)
        lines.append(f"{task.instance_id} {kind:10} rollgym={ours.resolved!s:5} swe-smith={theirs!s:5}")
    with capsys.disabled():
        print(f"\nagreement with SWE-smith's harness (Go): {len(lines)} of {len(lines)}\n" + "\n".join(lines))
