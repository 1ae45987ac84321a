"""`check_env`: every registered environment passes gymnasium's checker (enabled at registration) and rollgym's."""

from __future__ import annotations

import time

import gymnasium
import pytest

import rollgym as rg
from rollgym.envs import EnvCheckError


def test_registered_environments_keep_gymnasiums_checker_on():
    ours = [spec for env_id, spec in gymnasium.registry.items() if env_id.startswith("rollgym/")]
    assert {s.id for s in ours} >= {"rollgym/Calculator-v0", "rollgym/SWE-v0"}
    assert all(not s.disable_env_checker and s.order_enforce for s in ours)
    assert "PassiveEnvChecker" in repr(rg.make("rollgym/Calculator-v0"))


def test_calculator_passes_check_env():
    rg.check_env(rg.make("rollgym/Calculator-v0"))


@pytest.mark.docker
def test_swe_passes_check_env_and_leaves_no_sandbox(docker_engine):
    rg.check_env(rg.make("rollgym/SWE-v0"))


class _Good(rg.Env):
    async def setup(self, task):
        return [{"role": "user", "content": "go"}], {"task_id": "t"}

    @rg.tool
    def ping(self, n: int) -> str:
        """Answer pong."""
        return "pong"

    async def compute_reward(self):
        return 0.0, {}


class _NoDocstring(_Good):
    @rg.tool
    def pong(self, n: int) -> str:
        return "ping"


class _ClockInInfo(_Good):
    async def astep(self, action):
        messages, reward, terminated, truncated, info = await super().astep(action)
        info["now"] = time.perf_counter()  # differs between two runs with the same seed and action
        return messages, reward, terminated, truncated, info


class _ErrorAsText(_Good):
    async def astep(self, action):
        messages, reward, terminated, truncated, info = await super().astep(action)
        info["error"] = "it broke"
        return messages, reward, terminated, truncated, info


class _AssistantFirst(_Good):
    async def setup(self, task):
        return [{"role": "assistant", "content": "hi"}], {"task_id": "t"}


@pytest.mark.parametrize(
    "cls,needle",
    [
        (_NoDocstring, "no description"),
        (_ClockInInfo, "info are not equivalent"),
        (_ErrorAsText, "exception itself"),
        (_AssistantFirst, "observation"),
    ],
)
def test_contract_breaches_are_named(cls, needle):
    rg.check_env(_Good())
    with pytest.raises(EnvCheckError, match=needle) as caught:
        rg.check_env(cls())
    assert isinstance(caught.value, rg.RollgymError) and isinstance(caught.value, AssertionError)


def test_step_info_is_typed_and_deterministic():
    env = rg.make("rollgym/Calculator-v0")
    env.reset(seed=1)
    call = {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    *_, first = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
    env.reset(seed=1)
    *_, second = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
    assert isinstance(first["tool_calls"][0], rg.ToolCallRecord) and first == second  # durations differ, records equal
    assert first["tool_calls"][0].duration_s >= 0 and first["tool_calls"][0].result == "3"
    env.close()


def test_default_tasks_is_a_method_of_env():
    assert len(rg.make("rollgym/Calculator-v0").unwrapped.default_tasks(3)) == 3
    assert len(rg.load_tasks("rollgym/SWE-v0", num_tasks=2)) == 2  # the bundled SWE tasks
    with pytest.raises(rg.UsageError, match="no default tasks"):
        _Good.default_tasks(2)
