"""A trainer's own venv (.ci/trainers-up) for the tests that run its code: its python (the test skips, saying how to
build it, where it is missing), a PYTHONPATH that puts the rollgym under test ahead of the venv's copy, and a side
script run there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import rollgym

ROOT = Path(__file__).resolve().parents[2]


def trainer_python(name: str) -> Path:
    out = subprocess.run(
        ["bash", str(ROOT / ".ci" / "trainers-up"), "python", name], capture_output=True, text=True, check=True
    )
    python = Path(out.stdout.strip())
    if not python.exists():
        pytest.skip(f"{name}'s venv is not built ({python}): run `bash .ci/trainers-up {name}` (CI's setup does)")
    return python


def side_env(tmp: Path) -> dict[str, str]:
    """The environment for a script run in a trainer's venv: this rollgym first on its path, offline."""
    path = tmp / "pythonpath"
    path.mkdir(exist_ok=True)
    link = path / "rollgym"
    if not link.exists():
        link.symlink_to(Path(rollgym.__file__).parent)
    return {**os.environ, "PYTHONPATH": str(path), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def run_side(trainer: str, script: Path, args: Sequence[object], out: Path, *, timeout: int = 900, **how: Any) -> Any:
    """Run `script` (a `*_side.py` beside the test) with `args` in `trainer`'s venv and return the JSON it wrote to
    `out`; its stderr's tail is shown when it fails. `how`: `extra_path` (one more folder on its path), `cwd`."""
    env = side_env(out.parent)
    if how.get("extra_path"):
        env["PYTHONPATH"] += f"{os.pathsep}{how['extra_path']}"
    done = subprocess.run(
        [str(trainer_python(trainer)), str(script), *map(str, args)],
        env=env,
        cwd=how.get("cwd"),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode:
        sys.stderr.write(done.stderr[-6000:])
    assert done.returncode == 0, f"{trainer}'s side ({script.name}) failed (its stderr is above)"
    return json.loads(out.read_text())
