"""Unified diffs: split per file, and drop the agent's changes to tests so grading cannot be gamed."""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rollgym.envs.sandbox import DockerSandbox

_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
TEST_CONFIG_FILES = {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py"}
#: The largest agent diff that is graded; anything larger is the agent's failure (`patch_failed`).
MAX_DIFF_BYTES = 2 * 2**20
_BINARY = re.compile(r"^(GIT binary patch|Binary files .* differ)$", re.M)


def diff_problem(diff: str, max_bytes: int = MAX_DIFF_BYTES) -> str | None:
    """Why an agent's diff is refused before grading (None when it is fine): over the size limit, or
    carrying binary files. Both are the agent's doing, so the verdict is `patch_failed`, never an
    infrastructure status (which would tell the trainer to drop the sample and spare the policy)."""
    size = len(diff.encode("utf-8", errors="surrogateescape"))
    if size > max_bytes:
        return f"the change is {size:,} bytes; changes over {max_bytes:,} bytes are not graded"
    binary = _BINARY.search(diff)
    if binary:
        where = diff.rfind("diff --git", 0, binary.start())
        header = diff[where : diff.find("\n", where)] if where >= 0 else ""
        return f"the change holds binary file contents ({header or binary.group(0)}); only text changes are graded"
    return None


def split_diff(diff: str) -> list[tuple[str, str]]:
    """[(path, chunk)] for each file of a `git diff` (path is the b/ side, or a/ for deletions)."""
    starts = [m.start() for m in _HEADER.finditer(diff)]
    chunks = []
    for i, start in enumerate(starts):
        chunk = diff[start : starts[i + 1] if i + 1 < len(starts) else len(diff)]
        m = _HEADER.match(chunk)
        assert m is not None  # every chunk starts where the header matched
        path = m.group(2) if m.group(2) != "/dev/null" else m.group(1)
        chunks.append((path, chunk))
    return chunks


def diff_paths(diff: str) -> set[str]:
    """Every path a diff touches (both sides of renames)."""
    paths = set()
    for m in _HEADER.finditer(diff):
        paths.update({m.group(1), m.group(2)})
    return paths


def is_test_path(path: str) -> bool:
    """Test files and test configuration: what an agent's patch may not change before grading."""
    parts = path.split("/")
    name = posixpath.basename(path)
    if name in TEST_CONFIG_FILES:
        return True
    if any(p in ("tests", "test", "testing") for p in parts[:-1]):
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def filter_agent_diff(diff: str, protected: set[str]) -> tuple[str, list[str]]:
    """The diff without chunks touching test files or `protected` paths; and the dropped paths."""
    kept, dropped = [], []
    for path, chunk in split_diff(diff):
        m = _HEADER.match(chunk)
        assert m is not None  # split_diff cut every chunk at a header
        both = set(m.groups())
        if any(is_test_path(p) or p in protected for p in both):
            dropped.append(path)
        else:
            kept.append(chunk)
    return "".join(kept), dropped


def apply_in_turn(
    sb: DockerSandbox, path: str, commands: tuple[str, ...] | list[str], workdir: str, reset: str = ""
) -> str | None:
    """The patch at `path` applied by the first of `commands` that succeeds (as a harness's fallback chain does),
    `reset` run between attempts when given; None on success, else the last command's output."""
    output = ""
    for attempt, command in enumerate(commands):
        if attempt and reset:
            sb.exec(reset, cwd=workdir, timeout=120)
        res = sb.exec(f"{command} {path}", cwd=workdir, timeout=120)
        if res.exit_code == 0:
            return None
        output = res.output
    return output
