"""The layers hold (docs/concepts.md#layers): pyproject.toml's import contracts, checked by import-linter on the
installed package, with every import counted (inside functions and under TYPE_CHECKING too)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import rollgym

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"
INSTALLED = Path(rollgym.__file__).parent


def lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", **({"PYTHONPATH": str(pythonpath)} if pythonpath else {})}
    return subprocess.run(
        [str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_import_contract_is_kept(tmp_path):
    proc = lint_imports(tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "4 kept, 0 broken" in proc.stdout, proc.stdout[-2000:]


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path):
    """The gate can fail: a copy of the package whose tokenization imports the CLI (inside a function, where a
    reader would not look) and whose core imports TRL is reported, naming both imports."""
    copy = tmp_path / "site" / "rollgym"
    shutil.copytree(INSTALLED, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "tokenization" / "messages.py", "a") as fh:
        fh.write("\n\ndef _reach_up():\n    from rollgym.cli import app\n\n    return app\n")
    with open(copy / "rollouts" / "policy.py", "a") as fh:
        fh.write("\n\ndef _trainer():\n    import trl\n\n    return trl\n")
    proc = lint_imports(tmp_path, pythonpath=tmp_path / "site")
    assert proc.returncode != 0 and " 0 broken" not in proc.stdout, proc.stdout[-4000:]
    assert "rollgym.tokenization.messages -> rollgym.cli" in proc.stdout
    assert "rollgym.rollouts.policy -> trl" in proc.stdout
