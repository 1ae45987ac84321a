"""The one import package `rollgym` and its subpackages, as installed."""

import ast
import importlib
import importlib.util
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_subpackages_import_from_one_package():
    for name in ("rollgym.tokenization", "rollgym.envs", "rollgym.engines", "rollgym.rollouts"):
        mod = importlib.import_module(name)
        assert mod.__name__ == name


def test_every_source_folder_is_listed_in_pyproject():
    """A folder with an __init__.py that pyproject does not list would vanish from the wheel. The SWE task folders
    (`envs/swe/tasks/`) are package data: the repositories they hold are the tasks', not packages of ours."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    mapping = {
        "tokenization": "rollgym.tokenization",
        "envs": "rollgym.envs",
        "engines": "rollgym.engines",
        "rollouts": "rollgym.rollouts",
    }
    found = set()
    for top, pkg in mapping.items():
        for init in (ROOT / top).rglob("__init__.py"):
            if init.is_relative_to(ROOT / "envs" / "swe" / "tasks"):
                continue
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((pkg, *rel)))
    missing = found - listed
    assert not missing, f"add these to [tool.setuptools] packages and package-dir: {sorted(missing)}"


def test_the_lowest_layers_load_nothing_of_ours_above_the_shared_root():
    """tokenization, envs and engines import nothing of ours but the shared root (errors, limits, models, version),
    at run time too (the import contract, tests/test_architecture.py, checks every import statically)."""
    import subprocess
    import sys

    root = {"rollgym.errors", "rollgym.limits", "rollgym.models", "rollgym.version"}
    for layer in ("rollgym.tokenization", "rollgym.envs", "rollgym.engines"):
        code = (
            f"import sys, {layer}; "
            f"ours = {{m for m in sys.modules if m.startswith('rollgym.') and not m.startswith('{layer}')}}; "
            "print(sorted(ours))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert set(ast.literal_eval(out)) <= root, (layer, out)


def test_tests_mirror_the_source_tree():
    """Each test folder names a source folder (tests/engines <-> engines, tests/rollouts <-> rollouts ...),
    except the suites that cross the tree: `examples` and `faults` (the fault suite of issue 17)."""
    fixtures = ROOT / "tests" / "fixtures"  # task repositories: their tests are data
    folders = {
        p.relative_to(ROOT / "tests") for p in (ROOT / "tests").rglob("test_*.py") if not p.is_relative_to(fixtures)
    }
    for test_file in folders:
        folder = test_file.parent
        if folder.parts and folder.parts[0] not in ("examples", "faults"):
            assert (ROOT / folder).is_dir(), f"tests/{folder} mirrors no source folder"


def test_the_runtime_needs_no_test_tool():
    """Test helpers and what only they use stay out of the package's runtime dependencies and out of the wheel."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {re.split(r"[<>=\[ ]", dep)[0] for dep in project["dependencies"]}
    assert not runtime & {"tiktoken", "pytest", "hypothesis", "selenium", "ruff", "pyright", "import-linter"}
    assert "tiktoken" in " ".join(project["optional-dependencies"]["test"])
    assert importlib.util.find_spec("rollgym.engines.testing") is None  # the stand-ins live in tests/standins
