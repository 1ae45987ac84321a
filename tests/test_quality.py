"""The quality gates CI runs: ruff (lint and format) on the whole tree, pyright (basic mode) on the installed
package, and a reason beside every suppression (`noqa`, `type: ignore`, `pyright: ignore`)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import rollgym

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: a suppression comment (noqa with its codes, type-ignore or pyright-ignore with their rules) and what follows it
SUPPRESSION = re.compile(r"#\s*(noqa|type:\s*ignore|pyright:\s*ignore)\b(.*)$")


def run(*argv: str | Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def tracked_python_files() -> list[Path]:
    """Our Python files: what git tracks, less what ruff's `extend-exclude` names (fixtures and task repositories,
    which are data written in other projects' styles)."""
    excluded = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"].get("extend-exclude", [])
    out = run("git", "ls-files", "-co", "--exclude-standard", "*.py").stdout.split()
    return [
        ROOT / f for f in out if (ROOT / f).is_file() and not any(f.startswith(e.rstrip("/") + "/") for e in excluded)
    ]


def test_ruff_finds_nothing():
    proc = run(BIN / "ruff", "check", ".", "--no-cache", "--output-format", "concise")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_ruff_format_leaves_every_file_as_it_is():
    proc = run(BIN / "ruff", "format", "--check", ".", "--no-cache")
    assert proc.returncode == 0, f"run `ruff format .`:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"


def test_pyright_finds_nothing_in_the_package():
    """Basic mode on the installed package, so its imports resolve as they do for users."""
    package = Path(rollgym.__file__).parent
    proc = run(BIN / "pyright", "-p", "pyproject.toml", "--pythonpath", sys.executable, package, timeout=900)
    assert proc.returncode == 0 and re.search(r"\b0 errors", proc.stdout), proc.stdout[-8000:] + proc.stderr[-2000:]


def test_every_suppression_says_why():
    bare = []
    for path in tracked_python_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            match = SUPPRESSION.search(line)
            if not match:
                continue
            rest = match.group(2)
            reason = re.sub(r"^(:\s*[A-Z]+[0-9]+(,\s*[A-Z]+[0-9]+)*|\[[^\]]*\])", "", rest).strip(" -#")
            if len(reason) < 8:
                bare.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bare, "say why beside each suppression:\n" + "\n".join(bare)
