"""`rg.check_env` passes on every catalogued id, one parametrised test over the catalogue: an id that needs an argument
to be made is checked with one (a task, a user model) or, where the argument is a server or an environment object of
the user's, refused without it naming that argument (their suites' tests check them made: tests/envs/suites/)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import rollgym as rg
from rollgym.envs.catalogue import CatalogueEntry, catalogue
from rollgym.errors import UsageError

FIXTURES = Path(__file__).parents[1] / "fixtures"

#: ids whose argument is the user's own: made without it, `make` names the argument
NEEDS_THE_USERS_OWN = {
    "verifiers/env-v0": "environment=",  # a vf.Taskset / vf.Env / taskset module: checked in tests/envs/suites/verifiers
    "openenv/env-v0": "`url`",  # a running server or an image: checked in tests/envs/suites/openenv
}
#: ids that start a Docker sandbox to reset: checked with a task of their own, on the slow lane
IN_DOCKER = {"rollgym/SWE-v0", "rollgym/Harbor-v0"}
#: τ²'s airline database takes ~1 s to read, and `check_env` reads it at every reset and evaluation
SLOW = IN_DOCKER | {"tau2/airline-v0"}


def entries() -> list[Any]:
    return [
        pytest.param(e, id=e.id, marks=[pytest.mark.slow] if e.id in SLOW else []) for e in catalogue() if e.installed
    ]


def made_with_its_arguments(entry: CatalogueEntry, tmp_path: Path) -> tuple[Any, dict | None]:
    """The environment made as a user would, and the task to check it with (None: its own default)."""
    if entry.suite == "tau2-bench":
        from rollgym.envs.suites.tau2.scripted_user import ScriptedUser

        return rg.make(entry.id, user_model=ScriptedUser(["Hi, I need help."])), None
    if entry.id == "rollgym/ToolDB-v0":
        folder = shutil.copytree(FIXTURES / "tooldb" / "restock", tmp_path / "restock")
        return rg.make(entry.id), rg.load_tasks(entry.id, str(folder))[0]
    if entry.id == "rollgym/Harbor-v0":
        folder = shutil.copytree(FIXTURES / "harbor" / "write-greeting", tmp_path / "write-greeting")
        return rg.make(entry.id), rg.load_tasks(entry.id, str(folder))[0]
    return rg.make(entry.id), None


def test_the_catalogue_has_every_suite_and_nothing_uncatalogued_is_checked():
    suites = {e.suite for e in catalogue()}
    assert {"rollgym", "reasoning-gym", "bfcl", "tau2-bench", "verifiers", "openenv", "textarena"} <= suites
    assert set(NEEDS_THE_USERS_OWN) | IN_DOCKER <= {e.id for e in catalogue()}


@pytest.mark.parametrize("entry", entries())
def test_check_env_passes_on_every_catalogued_id(entry: CatalogueEntry, tmp_path: Path, request):
    if entry.id in NEEDS_THE_USERS_OWN:
        with pytest.raises(UsageError, match=NEEDS_THE_USERS_OWN[entry.id]):
            rg.make(entry.id)
        return
    if entry.id in IN_DOCKER:
        base = request.getfixturevalue("base_image")
        if entry.id == "rollgym/Harbor-v0":  # the fixture task's Dockerfile starts FROM rollgym/base
            import docker

            docker.from_env().images.get(base).tag("rollgym/base", "latest")
    env, task = made_with_its_arguments(entry, tmp_path)
    try:
        rg.check_env(env, task=task)
    finally:
        env.close()
