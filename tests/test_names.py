"""Module names mean one thing: two modules of the package share a basename only where the name means the same in
both, and every `errors.py` holds only branches of the one error tree (`rollgym.errors`)."""

from __future__ import annotations

import importlib
import inspect
from collections import defaultdict
from pathlib import Path

from rollgym.errors import RollgymError

ROOT = Path(__file__).resolve().parents[1]

#: Basenames several modules share on purpose, each with the one meaning it has everywhere. A name not here that two
#: modules share fails the test: rename one for what it holds (as `registry.py` became `engines/specs.py`,
#: `agents/catalog.py` and `envs/core/registration.py`, `ray/spec.py` `ray/actor_spec.py`, and the sandbox's
#: `output.py` `capture.py`).
SHARED_NAMES = {
    "app.py": "a layer's application object: the `rollgym` typer app (cli), the proxy's FastAPI app (proxy)",
    "base.py": "the abstract base of a family: engines, tokenization formats, tokenization parsers",
    "catalogue.py": "the catalogue of environment ids: the list itself (envs) and `rollgym envs` that prints it (cli)",
    "config.py": "a layer's settings model: `RayConfig` (ray), `AsyncRolloutConfig` (trl/async_grpo)",
    "env.py": "an environment class: `Env` (envs/core) and the SWE environment built on it (envs/swe)",
    "errors.py": "a layer's branch of the one error tree, only `RollgymError` subclasses (checked below)",
    "dataset.py": "rollgym tasks as the rows a trainer's own dataset reads (verl's, SkyRL's, OpenRLHF's rooms)",
    "engine.py": "a trainer's own inference client as a rollgym `Engine` (verl's, SkyRL's, OpenRLHF's rooms)",
    "export.py": "`rollgym export` to a trainer's batch format: TRL's Parquet (integrations), a trainer's (its room)",
    "generate.py": "`rollgym.generate` (rollouts) and the `rollgym generate` command that calls it (cli)",
    "images.py": "container images: the sandbox's (pull, build, base) and the SWE tasks' built on them",
    "jobs.py": "batch jobs: `RolloutJob`s and their executors (rollouts), agent runs as such jobs (agents)",
    "models.py": "pydantic data models: the `BoundaryModel` base (root) and the sandbox's settings built on it",
    "pool.py": "a pool of warm workers: started sandboxes (envs/sandbox), rollout actors (ray)",
    "tasks.py": "task rows: what a row is and reading one (envs/core), where a run's rows come from (rollouts)",
    "task_sources.py": "where task rows come from: the registry of sources (envs/core), the SWE sources it holds (envs/swe)",
    "versions.py": "weights versions of sampled tokens: in one process (rollouts), across Ray actors (ray)",
}


def package_modules(root: Path) -> list[Path]:
    """Every module of the package rooted at `root`: the .py files of the folders reached through `__init__.py`s
    (tests, benchmarks, examples and task data have none, so they are not the package)."""
    found, folders = [], [root]
    while folders:
        folder = folders.pop()
        found.extend(sorted(folder.glob("*.py")))
        folders.extend(sub for sub in sorted(folder.iterdir()) if (sub / "__init__.py").is_file())
    return found


def shared_basenames(root: Path) -> dict[str, list[str]]:
    """Basenames (other than `__init__.py`) that two or more modules under `root` share, with their paths."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in package_modules(root):
        if path.name != "__init__.py":
            by_name[path.name].append(str(path.relative_to(root)))
    return {name: sorted(paths) for name, paths in by_name.items() if len(paths) > 1}


def test_modules_share_a_name_only_where_it_means_the_same():
    shared = shared_basenames(ROOT)
    unexplained = {name: paths for name, paths in shared.items() if name not in SHARED_NAMES}
    assert not unexplained, (
        f"modules that share a name with no one meaning (rename one for what it holds): {unexplained}"
    )
    stale = sorted(set(SHARED_NAMES) - set(shared))
    assert not stale, f"SHARED_NAMES lists names no two modules share any more: {stale}"


def test_the_renamed_modules_stay_gone():
    """`registry.py` meant three mechanisms and `spec.py`/`output.py` two things each; none may come back twice."""
    shared = shared_basenames(ROOT)
    for name in ("registry.py", "spec.py", "output.py", "specs.py"):
        assert name not in shared, shared.get(name)


def test_the_check_finds_a_name_shared_with_two_meanings(tmp_path):
    """The gate can fail: two subpackages each with a `registry.py` are reported; a folder without `__init__.py`
    (data, tests) is not part of the package."""
    for sub in ("", "a", "b", "a/inner"):
        (tmp_path / sub).mkdir(exist_ok=True)
        (tmp_path / sub / "__init__.py").write_text("")
    (tmp_path / "a" / "registry.py").write_text("")
    (tmp_path / "b" / "registry.py").write_text("")
    (tmp_path / "a" / "inner" / "errors.py").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "errors.py").write_text("")  # no __init__.py: not a module of the package
    assert shared_basenames(tmp_path) == {"registry.py": ["a/registry.py", "b/registry.py"]}


def test_every_errors_module_holds_only_branches_of_the_one_tree():
    """Each `errors.py` means the same: the exceptions of its layer, every one a `RollgymError`."""
    modules = [p for p in package_modules(ROOT) if p.name == "errors.py"]
    assert len(modules) >= 2
    for path in modules:
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = importlib.import_module(".".join(("rollgym", *parts)))
        classes = [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]
        assert classes, module.__name__
        for cls in classes:
            assert issubclass(cls, RollgymError), f"{module.__name__}.{cls.__name__} is not a RollgymError"
