"""R2E-Gym rows, graded as R2E-Gym grades them: its parser and exact-match reward (units), and end to end on an
image shaped as R2E-Gym's (tests/fixtures/r2e/strtools: the repository at the commit before the fix with the fix in
its history, a venv, `run_tests.sh`, hidden tests in /r2e_tests): the gold patch resolves, the empty patch does not,
a patch that also fixes a test expected to fail does not either (the whole map must match), and in an episode the
hidden tests are out of the repository, the fix commit is out of reach, and a fix made with the tools scores 1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import docker
import gymnasium
import pytest

import rollgym.envs  # noqa: F401 - registers rollgym/SWE-v0
from rollgym.envs.swe.formats import RowFormatError
from rollgym.envs.swe.r2e import gold_patch, matches, normalized, parse_log
from rollgym.envs.swe.task import parse_task

FIXTURE = Path(__file__).parents[2] / "fixtures" / "r2e" / "strtools"
#: what R2E-Gym's pipeline stores for the fix commit (`expected_output_json`): its parser's map, written by hand here
EXPECTED = {
    "TestSlugify.test_words": "PASSED",
    "TestSlugify.test_runs_of_spaces": "PASSED",
    "TestSlugify.test_tabs_and_newlines": "PASSED",
    "test_initials": "PASSED",
    "test_initials_of_nothing": "FAILED",
}
LOG = """============================= test session starts ==============================
r2e_tests/test_strtools.py ..F..                                          [100%]
=========================== short test summary info ============================
PASSED r2e_tests/test_strtools.py::TestSlugify::test_words
PASSED r2e_tests/test_strtools.py::TestSlugify::test_runs_of_spaces[a-1]
\x1b[31mFAILED\x1b[0m r2e_tests/test_strtools.py::test_initials_of_nothing - AssertionError: expected PASSED
ERROR r2e_tests/test_other.py - ImportError: no module
SKIPPED [1] r2e_tests/test_strtools.py:9: later
XFAIL r2e_tests/test_strtools.py::test_later
========================= 1 failed, 2 passed in 0.03s ==========================
"""


def test_r2e_gyms_parser_and_reward():
    parsed = parse_log(LOG)
    # substring checks in R2E-Gym's order: a FAILED line that mentions PASSED counts as PASSED, its key keeps the rest
    assert parsed == {
        "TestSlugify.test_words": "PASSED",
        "TestSlugify.test_runs_of_spaces[a-1]": "PASSED",
        "test_initials_of_nothing - AssertionError: expected PASSED": "PASSED",
        "": "ERROR",  # a collection error names no test
    }
    assert normalized(parsed)["test_initials_of_nothing"] == "PASSED"
    assert parse_log("no summary here") == {} and parse_log(None) == {}
    assert matches({"a": "PASSED", "b": "FAILED"}, {"a": "PASSED", "b": "FAILED"})
    assert not matches({"a": "PASSED", "b": "PASSED"}, {"a": "PASSED", "b": "FAILED"})  # a test expected to fail
    assert not matches({"a": "PASSED"}, {"a": "PASSED", "b": "FAILED"})  # a missing test
    assert matches({"a": "PASSED", "": "ERROR"}, {"a": "PASSED", "x": "ERROR"})  # the empty key: counted, not compared


def test_the_gold_patch_is_the_fix_commits_python_files(tmp_path):
    old, new = (FIXTURE / "old/strtools.py").read_text(), (FIXTURE / "new/strtools.py").read_text()
    parsed = {
        "file_diffs": [
            {"old_file_content": old, "new_file_content": new, "header": {"file": {"path": "strtools.py"}}},
            {"old_file_content": "a\n", "new_file_content": "b\n", "header": {"file": {"path": "README.md"}}},
            {"old_file_content": "", "new_file_content": "x = 1", "header": {"file": {"path": "pkg/new.py"}}},
        ]
    }
    patch = gold_patch(parsed)
    assert "README.md" not in patch and "new file mode 100644" in patch and "\\ No newline at end of file" in patch
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "strtools.py").write_text(old)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=repo, check=True)
    assert (repo / "strtools.py").read_text() == new and (repo / "pkg/new.py").read_text() == "x = 1"


def test_a_row_without_its_commit_or_expected_map_is_one_clear_error():
    row = {"repo_name": "strtools", "docker_image": "a/b:c", "commit_hash": "f0d7", "expected_output_json": "{}"}
    with pytest.raises(RowFormatError, match="R2E-Gym row strtools@f0d7: parsed_commit_content has no old_commit"):
        parse_task(row)
    with pytest.raises(RowFormatError, match="expected_output_json names no test"):
        parse_task({**row, "parsed_commit_content": json.dumps({"old_commit_hash": "abc", "file_diffs": []})})


@pytest.fixture(scope="module")
def r2e_row(base_image) -> dict:
    """The fixture's image, built offline, and its row as R2E-Gym's dataset writes one."""
    client = docker.from_env()
    image, _ = client.images.build(
        path=str(FIXTURE),
        buildargs={"BASE_IMAGE": base_image},
        tag="rollgym/test-r2e-strtools:build",
        rm=True,
        network_mode="none",
    )
    heads = client.containers.run(
        image.id, ["git", "rev-parse", "HEAD", "fix"], working_dir="/testbed", network_mode="none", remove=True
    )
    old_hash, new_hash = heads.decode().split()
    name = f"rollgym/strtools_final:{new_hash}"  # R2E-Gym's naming: <repo>_final:<fix commit>
    image.tag(name)
    old, new = (FIXTURE / "old/strtools.py").read_text(), (FIXTURE / "new/strtools.py").read_text()
    parsed = {
        "file_diffs": [{"old_file_content": old, "new_file_content": new, "header": {"file": {"path": "strtools.py"}}}],
        "old_commit_hash": old_hash,
        "new_commit_hash": new_hash,
        "commit_message": "slugify: any whitespace separates words",
        "commit_date": "2024-01-02T00:00:00",
    }
    return {
        "repo_name": "strtools",
        "docker_image": name,
        "commit_hash": new_hash,
        "parsed_commit_content": json.dumps(parsed),
        "execution_result_content": "{}",
        "expected_output_json": json.dumps(EXPECTED, indent=4),
        "problem_statement": "[ISSUE]\n`slugify('Hello   World')` gives `hello---world`.\n[/ISSUE]",
        "modified_files": ["strtools.py"],
        "relevant_files": ["strtools.py"],
    }


@pytest.mark.docker
@pytest.mark.slow
def test_gold_resolves_and_the_whole_expected_map_must_match(r2e_row):
    from rollgym.envs.swe.grading import grade_patch

    task = parse_task(r2e_row)
    assert task.row_format == "r2e-gym" and task.grader == "r2e" and task.test_timeout_s == 300
    assert task.problem_statement.startswith("`slugify") and task.FAIL_TO_PASS == [
        "TestSlugify.test_runs_of_spaces",
        "TestSlugify.test_tabs_and_newlines",
        "TestSlugify.test_words",
        "test_initials",
    ]
    gold = grade_patch(task, task.patch, keep_all_outcomes=True)
    assert gold.status == "graded" and gold.resolved, gold
    assert gold.all_outcomes["test_initials_of_nothing"] == "failed"  # as expected: still resolved
    empty = grade_patch(task, "")
    assert empty.status == "graded" and not empty.resolved and empty.f2p["TestSlugify.test_runs_of_spaces"] == "failed"
    old, new = (FIXTURE / "old/strtools.py").read_text(), (FIXTURE / "new/strtools.py").read_text()
    more = new.replace("for part in name.split())", 'for part in name.split()) or "?"')
    assert more != new
    both = gold_patch(
        {
            "file_diffs": [
                {"old_file_content": old, "new_file_content": more, "header": {"file": {"path": "strtools.py"}}}
            ]
        }
    )
    over = grade_patch(task, both)  # fixes a test the fix commit leaves failing: not R2E-Gym's expected map
    assert over.status == "graded" and not over.resolved and "test_initials_of_nothing" in over.error


@pytest.mark.docker
@pytest.mark.slow
def test_an_episode_hides_the_tests_and_the_fix_and_scores_a_fix(r2e_row):
    env = gymnasium.make("rollgym/SWE-v0")
    try:
        obs, info = env.reset(options={"task": r2e_row})
        obs, *_ = env.step(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps(
                                {
                                    "command": "ls /root; readlink r2e_tests; git log --all --oneline | wc -l; "
                                    "git status --short | wc -l; command -v python"
                                }
                            ),
                        },
                    }
                ],
            }
        )
        out = obs[0]["content"].split()
        assert "r2e_tests" in out and "run_tests.sh" in out and "/root/r2e_tests" in out, out
        assert out[-3:] == ["1", "0", "/root/.venv/bin/python"], out  # the fix commit hidden; a clean tree; R2E's PATH
        fix = "sed -i 's/text.lower().split(\" \")/text.lower().split()/' strtools.py && git diff --stat"
        call = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": fix})}}
        obs, *_ = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
        assert "strtools.py" in obs[0]["content"]
        done = {"id": "c3", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
        obs, reward, term, trunc, info = env.step({"role": "assistant", "content": None, "tool_calls": [done]})
        assert term and reward == 1.0 and info["grade"]["status"] == "graded", info["grade"]
        assert "r2e_tests" not in info["diff"] and ".venv" not in info["diff"]
    finally:
        env.close()
