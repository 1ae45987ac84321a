"""A task's repository on the host, without Docker: for agents that run as local programs (Aider, Claude Code...).

The checkout is the task's bundled sdist with its bug patch applied, committed as the base, exactly the tree
its image builds. The agent's change is then the working tree's diff against that commit, ready to grade.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from collections.abc import Iterable
from pathlib import Path

from rollgym.envs.swe.errors import CheckoutError
from rollgym.envs.swe.images import sdist_path
from rollgym.envs.swe.task import SWETask

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "rollgym",
    "GIT_AUTHOR_EMAIL": "rollgym@localhost",
    "GIT_COMMITTER_NAME": "rollgym",
    "GIT_COMMITTER_EMAIL": "rollgym@localhost",
}


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_IDENTITY}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CheckoutError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def checkout_task(task: SWETask, dest: str | os.PathLike, *, ignore: Iterable[str] = ()) -> Path:
    """Unpack `task`'s sdist under `dest`, apply its bug patch and commit it; return the repository root.

    `ignore` adds patterns to `.git/info/exclude` (an agent's own files, e.g. `.aider*`), so they stay out of the diff.
    """
    spec = task.env_spec
    if spec is None or not spec.sdist:
        raise CheckoutError(
            f"{task.instance_id}: no bundled sdist to check out; run the agent inside the task's sandbox instead"
        )
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist_path(task)) as tar:
        tar.extractall(dest, filter="data")
    roots = [p for p in dest.iterdir() if p.is_dir()]
    if len(roots) != 1:
        raise CheckoutError(f"{task.instance_id}: the sdist should hold one top-level folder, found {len(roots)}")
    root = roots[0]
    if spec.bug_patch:
        proc = subprocess.run(
            ["patch", "-p1", "--no-backup-if-mismatch"], cwd=root, input=spec.bug_patch.encode(), capture_output=True
        )
        if proc.returncode != 0:
            raise CheckoutError(
                f"{task.instance_id}: the bug patch does not apply: {proc.stdout.decode(errors='replace')[-500:]}"
            )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    patterns = list(ignore)
    if patterns:
        with open(root / ".git" / "info" / "exclude", "a") as fh:
            fh.write("\n" + "\n".join(patterns) + "\n")
    return root


def working_tree_diff(repo: str | os.PathLike) -> str:
    """Everything changed in `repo` since its base commit (new files included), as a `git diff` to grade."""
    repo = Path(repo)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached")
