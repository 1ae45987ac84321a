"""The clean-checkout check (tests/conftest.py, tests/support/checkout.py) sees what a run writes into a git work
tree, and only that: a new file, a newly changed tracked file, not the suite's own caches nor what was there before."""

from __future__ import annotations

import subprocess

from support.checkout import new_paths, status


def _git(repo, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_file_written_into_the_work_tree_is_new(tmp_path):
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "tracked.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("ignored/\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    (repo / "already-there.txt").write_text("a developer's untracked file\n")
    before, why = status(repo)
    assert before == {"?? already-there.txt"} and why == ""

    (repo / "logs" / "run_evaluation").mkdir(parents=True)
    (repo / "logs" / "run_evaluation" / "run_instance.log").write_text("a harness's log\n")
    (repo / "tracked.py").write_text("x = 2\n")
    for own in (".pytest_cache", "__pycache__", "ignored", "rollgym.egg-info"):
        (repo / own).mkdir()
        (repo / own / "f").write_text("")
    after, _ = status(repo)
    assert new_paths(before, after) == [" M tracked.py", "?? logs/run_evaluation/run_instance.log"]
    assert new_paths(after, after) == []


def test_a_folder_that_is_no_work_tree_is_said_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # a work tree above it is not its
    lines, why = status(tmp_path)
    assert lines is None and "not a git work tree" in why
