"""A trainer's own venv (.ci/trainers-up) for the tests that run its code: its python (the test skips, saying how to
build it, where it is missing) and a PYTHONPATH that puts the rollgym under test ahead of the venv's copy."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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
