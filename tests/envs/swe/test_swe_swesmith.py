"""SWE-smith rows, graded as SWE-smith grades them: its profiles (rollgym's table), the bug reversed as gold, its
parser, markers and rules (units); and end to end on an image laid out as SWE-smith lays out its snapshots (the
fixture's repository as the upstream, then `create_mirror`, the task's branch and the image's clone of the mirror:
support/swesmith.py; tagged with a real profile's image name): a row in SWE-smith's own schema (no base_commit)
validates, gold resolving and empty not; in an episode the agent starts on the bug with the FAIL_TO_PASS tests
removed and no history of the bug, and a fix made with the tools scores 1; rollgym's verdicts equal SWE-smith's own
harness's."""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path

import docker
import gymnasium
import pytest

import rollgym.envs  # noqa: F401 - registers rollgym/SWE-v0
from rollgym.envs.swe.formats import RowFormatError, detect_format
from rollgym.envs.swe.swesmith import parse_log, read_test_output, table, verdict
from rollgym.envs.swe.task import parse_task

FIXTURE = Path(__file__).parents[2] / "fixtures" / "swesmith"
UPSTREAM = "rollgym-tests/swesmith-upstream:addict"  # the fixture's repository, before SWE-smith's layout
PROFILE = "mewwts__addict.75284f95"  # a real Python profile (swesmith 0.0.9); the fixture stands in for its image
F2P = ["tests/test_slugify.py::test_runs_of_spaces", "tests/test_slugify.py::test_tabs_and_newlines"]
P2P = ["tests/test_slugify.py::test_words", "tests/test_initials.py::test_initials"]


def _bug() -> str:
    src = (FIXTURE / "repo/strtools.py").read_text()
    bugged = src.replace("text.lower().split())", 'text.lower().split(" "))')
    assert bugged != src
    body = "".join(
        difflib.unified_diff(src.splitlines(True), bugged.splitlines(True), "a/strtools.py", "b/strtools.py")
    )
    return "diff --git a/strtools.py b/strtools.py\n" + body


def _row(**extra) -> dict:
    return {
        "instance_id": f"{PROFILE}.func_pm_op_change__abc123",
        "repo": f"swesmith/{PROFILE}",
        "patch": _bug(),
        "FAIL_TO_PASS": F2P,
        "PASS_TO_PASS": P2P,
        "image_name": table()["profiles"][PROFILE]["image"],
        "problem_statement": "slugify('Hello   World') gives 'hello---world'.",
        **extra,
    }


def test_profiles_bug_reversal_parser_and_rules(tmp_path):
    assert detect_format(_row()) == "swe-smith"
    task = parse_task(_row(base_commit="a" * 40))
    assert task.grader == "swesmith" and task.image == "swebench/swesmith.x86_64.mewwts_1776_addict.75284f95"
    assert (
        task.test_timeout_s == 90
        and "pytest --disable-warnings --color=no --tb=no --verbose" in task.model_extra["swesmith_test_cmd"]
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    original = (FIXTURE / "repo/strtools.py").read_text()
    (repo / "strtools.py").write_text(original)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for patch in (task.model_extra["bug_patch"], task.patch):  # the bug, then the gold patch: back to the snapshot
        subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=repo, check=True)
    assert (repo / "strtools.py").read_text() == original

    log = "tests/test_a.py::test_x PASSED [ 50%]\ntests/test_a.py::test_y XFAIL\ntests/test_a.py::test_z SKIPPED (no)\n"
    assert parse_log(log) == {
        "tests/test_a.py::test_x": "PASSED",
        "tests/test_a.py::test_y": "XFAIL",
        "tests/test_a.py::test_z": "SKIPPED",
    }
    traced = f"+ cd /testbed\n+ : '>>>>> Start Test Output'\n{log}+ : '>>>>> End Test Output'\n"
    assert read_test_output(traced) == f"\n{log}"
    assert read_test_output(traced.replace("+ : ", "echo ")) is None  # echoed markers: SWE-smith finds no output
    # a skipped test counts neither way; a missing one fails
    assert verdict({"a": "PASSED", "b": "SKIPPED"}, ["a", "b"], [])[2]
    assert not verdict({"a": "PASSED"}, ["a"], ["gone"])[2]


@pytest.mark.parametrize(
    "row, says",
    [
        (
            {"repo": "swesmith/jqlang__jq.b9e19de7"},
            "jqlang__jq.b9e19de7 is a CProfile with a log parser rollgym does not have (Jqb9e19de76.log_parser)",
        ),
        ({"repo": "swesmith/nobody__nothing.12345678"}, "'nobody__nothing.12345678' is not one of the 647 SWE-smith"),
        ({"patch": ""}, "needs its bug as `patch`"),
    ],
    ids=["other-language", "unknown", "no-bug"],
)
def test_a_row_rollgym_cannot_grade_is_one_clear_error(row, says):
    with pytest.raises(RowFormatError) as info:
        parse_task(_row(**row))
    assert says in str(info.value)


@pytest.fixture(scope="module")
def upstream_image(base_image) -> str:
    """The fixture's repository at one commit (the profile's upstream commit, which SWE-smith's images drop)."""
    image, _ = docker.from_env().images.build(
        path=str(FIXTURE), buildargs={"BASE_IMAGE": base_image}, tag=UPSTREAM, rm=True, network_mode="none"
    )
    return str(image.id)


@pytest.fixture(scope="module")
def swesmith_row(upstream_image) -> dict:
    """A row in SWE-smith's own schema (no base_commit) on its image laid out as SWE-smith lays it out."""
    from support.swesmith import mirror_image

    mirror_image(upstream_image, _row(), ["tests/test_slugify.py"])
    return _row()


def _in_image(image: str, command: str) -> str:
    out = docker.from_env().containers.run(image, ["sh", "-c", command], network_mode="none", remove=True)
    return out.decode().strip()


@pytest.mark.docker
@pytest.mark.slow
def test_a_row_without_base_commit_validates_on_swe_smiths_layout(swesmith_row, upstream_image):
    """`rollgym validate`'s checks: the image holds SWE-smith's mirror (not the upstream commit), the repository
    state is found there (the task's branch, the mirror's main), the gold patch resolves and the empty one does not."""
    from rollgym.envs.swe.validate import validate_tasks

    upstream = _in_image(upstream_image, "git rev-parse HEAD")
    layout = _in_image(
        swesmith_row["image_name"], f"git log --all --format=%s; git cat-file -e {upstream} || echo no-upstream"
    )
    assert sorted(layout.splitlines()) == ["Bug Patch", "Initial commit", "Remove F2P Tests", "no-upstream"], layout
    # the task's branch in the image (pushed before the image was built), and a task whose branch is not (the bug
    # is then applied to the mirror's main, as SWE-smith's own branch was made)
    no_branch = {**swesmith_row, "instance_id": f"{PROFILE}.func_pm_op_change__nobranch"}
    for row in validate_tasks([parse_task(swesmith_row), parse_task(no_branch)]):
        assert row.verdict == "valid", (row.instance_id, row.problem)
        assert row.gold is not None and row.empty is not None and row.gold.resolved and not row.empty.resolved
        assert row.empty.f2p == dict.fromkeys(F2P, "failed") and set(row.empty.p2p.values()) == {"passed"}


@pytest.mark.docker
def test_an_image_without_swe_smiths_layout_is_one_line_naming_its_head(upstream_image):
    """No task branch and no mirror `main` (the upstream repository on another branch): the row's base_commit must
    say."""
    from rollgym.envs.swe.base_commit import check_image
    from rollgym.envs.swe.errors import WrongBaseCommitError

    box = docker.from_env().containers.run(upstream_image, ["git", "branch", "-m", "upstream"], detach=True)
    try:
        assert box.wait(timeout=60)["StatusCode"] == 0, box.logs().decode()
        image = str(box.commit(repository=UPSTREAM.split(":")[0], tag="no-main").id)
    finally:
        box.remove(force=True)
    task = parse_task(_row())
    with pytest.raises(WrongBaseCommitError) as info:
        check_image(task, image)
    head = _in_image(image, "git rev-parse HEAD")
    assert info.value.head == head and "neither the task's branch" in str(info.value), info.value


@pytest.mark.docker
@pytest.mark.slow
def test_an_episode_starts_on_the_bug_without_its_tests_or_history(swesmith_row):
    env = gymnasium.make("rollgym/SWE-v0")

    def bash(command: str, call_id: str) -> str:
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        obs, *_ = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
        return obs[0]["content"]

    try:
        main = _in_image(swesmith_row["image_name"], "git rev-parse main")
        env.reset(options={"task": {**swesmith_row, "base_commit": main}})  # a row that names its commit
        out = bash(
            "ls tests; git log --all --oneline | wc -l; git status --short | wc -l; grep -c 'split(\" \")' strtools.py",
            "c1",
        )
        assert out.split() == ["test_initials.py", "1", "0", "1"], out  # no F2P file, one commit, the bug in place
        assert "Bug Patch" not in bash("git log --all --format=%s", "c2")
        assert "strtools.py" in bash("sed -i 's/split(\" \")/split()/' strtools.py && git diff --stat", "c3")
        done = {"id": "c4", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
        obs, reward, term, trunc, info = env.step({"role": "assistant", "content": None, "tool_calls": [done]})
        assert term and reward == 1.0 and info["grade"]["status"] == "graded", info["grade"]
        assert "test_slugify" not in info["diff"]
    finally:
        env.close()


@pytest.mark.docker
@pytest.mark.slow
def test_rollgyms_verdict_is_swe_smiths_own(swesmith_row, tmp_path, capsys):
    """Gold, empty, a patch that fixes the bug and breaks a PASS_TO_PASS test, and one that prints fake pass lines:
    rollgym's verdict equals SWE-smith's own harness's (`run_evaluation`, swesmith 0.0.9) on each."""
    from support.swesmith import python, swesmith_resolved

    from rollgym.envs.swe.grading import grade_patch

    if python() is None:
        pytest.skip("SWE-smith's harness venv is missing (.ci/harnesses-up failed: see its output)")
    task = parse_task(swesmith_row)
    src = (FIXTURE / "repo/strtools.py").read_text()
    bugged = src.replace("text.lower().split())", 'text.lower().split(" "))')
    breaks = bugged.replace('text.lower().split(" "))', "text.lower().split())").replace(
        'return "".join(part[0].upper() for part in name.split())', 'return "broken"'
    )
    fake = bugged + "".join(f"\nprint({t + ' PASSED'!r})" for t in F2P) + "\n"
    patches = {"gold": task.patch, "empty": "", "breaks_p2p": _edit(bugged, breaks), "fake_pass": _edit(bugged, fake)}
    expected = {"gold": True, "empty": False, "breaks_p2p": False, "fake_pass": False}
    instance = {k: v for k, v in swesmith_row.items() if k != "image_name"}
    table = []
    for kind, patch in patches.items():
        ours = grade_patch(task, patch)
        theirs = swesmith_resolved(instance, patch, tmp_path)
        assert ours.status == "graded" and ours.resolved == theirs == expected[kind], (kind, ours, theirs)
        table.append(f"{task.instance_id} {kind:10} rollgym={ours.resolved!s:5} swe-smith={theirs!s:5}")
    with capsys.disabled():
        print(f"\nagreement with SWE-smith's harness: {len(table)} of {len(table)}\n" + "\n".join(table))


def _edit(before: str, after: str) -> str:
    body = "".join(
        difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/strtools.py", "b/strtools.py")
    )
    return "diff --git a/strtools.py b/strtools.py\n" + body
