"""Whether the suite wrote into the checkout (issue 38, item 7): the checkout's `git status` taken when the session
starts and again when it ends; a path that is new at the end was written by something the suite ran."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path, PurePosixPath

#: folders the suite's own tools write (pytest's cache, hypothesis's database, bytecode, an editable install's
#: metadata, a build); .gitignore already hides them, this keeps them out if it did not
SUITE_OWN = {".venv", ".pytest_cache", ".hypothesis", "__pycache__", "build"}


def status(root: Path) -> tuple[set[str] | None, str]:
    """The lines of `git status --porcelain --untracked-files=all` for the checkout at `root`, or None and why not
    when it is no git work tree (a source tarball, no git installed). Reads only: no index refresh is written."""
    if shutil.which("git") is None:
        return None, "git is not installed"
    inside = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True
    )
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None, f"{root} is not a git work tree ({(inside.stderr or inside.stdout).strip()[:200]})"
    out = subprocess.run(
        ["git", "--no-optional-locks", "-C", str(root), "status", "--porcelain", "--untracked-files=all", "--", "."],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return None, f"git status failed in {root}: {out.stderr.strip()[:200]}"
    return {line for line in out.stdout.splitlines() if line.strip()}, ""


def _suite_own(line: str) -> bool:
    path = line[3:].split(" -> ")[-1].strip('"')
    return any(part in SUITE_OWN or part.endswith(".egg-info") for part in PurePosixPath(path).parts)


def new_paths(before: set[str], after: set[str]) -> list[str]:
    """The status lines `after` has that `before` had not (a new file, a newly changed or deleted one), but the
    suite's own caches."""
    return sorted(line for line in after - before if not _suite_own(line))
