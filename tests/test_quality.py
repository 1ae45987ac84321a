"""The quality gates CI runs: ruff (lint and format) on the whole tree, pyright (basic mode) on a copy of the installed
package, and a reason beside every suppression (`noqa`, `type: ignore`, `pyright: ignore`)."""

from __future__ import annotations

import json
import re
import shutil
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


def packaged_copy(into: Path) -> Path:
    """Copy the Python files of the package as it is installed (the subpackages `[tool.setuptools] packages`
    lists, not the tests, examples or bundled task repositories beside them) into `into`/rollgym."""
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    source = Path(rollgym.__file__).parent
    for name in packages:
        relative = Path(*name.split(".")[1:])
        (into / "rollgym" / relative).mkdir(parents=True, exist_ok=True)
        for module in (source / relative).glob("*.py"):
            shutil.copyfile(module, into / "rollgym" / relative / module.name)
    return into / "rollgym"


def test_pyright_finds_nothing_in_the_package(tmp_path):
    """Basic mode on a copy of the package outside the venv: pyright skips any file under a dot folder such as
    `.venv` (its default exclude) and under the interpreter's search paths, so run on the installed package
    itself it checks no file at all. Settings from `[tool.pyright]`; `rollgym.*` imports resolve to the copy,
    third-party ones to this interpreter's environment."""
    packaged_copy(tmp_path)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pyright"]
    config |= {"include": ["rollgym"], "extraPaths": [str(tmp_path)]}
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    proc = run(BIN / "pyright", "-p", tmp_path, "--pythonpath", sys.executable, "--outputjson", timeout=900)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(proc.stdout[-4000:] + proc.stderr[-2000:]) from None
    assert report["summary"]["filesAnalyzed"] >= len(list(tmp_path.rglob("*.py"))) > 100, report["summary"]
    errors = [
        f"{Path(d['file']).relative_to(tmp_path)}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule')})"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert proc.returncode == 0 and not errors, "\n".join(errors) + proc.stderr[-2000:]


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
