"""Registration: an environment of your own is reached as `module:id` (gymnasium's form) by `rg.make` and whatever
takes an environment id; registering an id again with a new class takes effect; an unknown id says how to name one."""

from __future__ import annotations

import textwrap

import pytest

import rollgym as rg
from rollgym.envs import UnknownEnvironmentError

UNITS = textwrap.dedent(
    '''
    import rollgym as rg

    class UnitsEnv(rg.Env):
        async def setup(self, task):
            return [{"role": "user", "content": "Convert 3 km to m."}], {"task_id": "units-0"}

        @rg.tool
        def km_to_m(self, km: float) -> str:
            """Kilometres to metres."""
            return str(km * 1000)

    rg.register("newcomer/Units-v0", UnitsEnv)
    '''
)


def test_a_module_prefix_imports_the_module_that_registers_the_environment(tmp_path, monkeypatch):
    (tmp_path / "units_env_for_make.py").write_text(UNITS)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = rg.make("units_env_for_make:newcomer/Units-v0")
    try:
        assert type(env.unwrapped).__name__ == "UnitsEnv"
    finally:
        env.close()
    rows = rg.load_tasks("units_env_for_make:newcomer/Units-v0", [{"task_id": "a"}])
    assert rows == [{"task_id": "a"}]


def test_an_unknown_id_or_module_says_how_to_name_one():
    with pytest.raises(UnknownEnvironmentError, match=r"'your_module:newcomer/Nope-v0'"):
        rg.make("newcomer/Nope-v0")
    with pytest.raises(UnknownEnvironmentError, match=r"cannot import 'no_such_module_here'"):
        rg.make("no_such_module_here:newcomer/Nope-v0")


def test_registering_an_id_again_with_a_new_class_takes_effect():
    class First(rg.Env):
        async def setup(self, task):
            return [{"role": "user", "content": "1"}], {}

    class Second(First):
        pass

    rg.register("tests/Reregistered-v0", First)
    rg.register("tests/Reregistered-v0", First)  # the same definition again: nothing changes
    assert type(rg.make("tests/Reregistered-v0").unwrapped) is First
    rg.register("tests/Reregistered-v0", Second)
    assert type(rg.make("tests/Reregistered-v0").unwrapped) is Second
