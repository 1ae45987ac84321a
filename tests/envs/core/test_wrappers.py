"""What rollgym drives under gymnasium's wrappers (envs/core/wrappers.py): the wrappers `make` adds pass through, a
`TimeLimit` becomes a step limit, and any other wrapper is refused with a `UsageError` naming it."""

from __future__ import annotations

import gymnasium
import pytest
from gymnasium.wrappers import ClipReward, OrderEnforcing, PassiveEnvChecker, TimeLimit, TransformObservation

import rollgym as rg
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.envs.core.wrappers import inner_env, inner_env_and_step_limit
from rollgym.errors import UsageError


class MyWrapper(gymnasium.Wrapper):
    """A user's own wrapper: rollgym cannot see what its step would do."""


def test_the_wrappers_make_adds_pass_through():
    made = rg.make("rollgym/Calculator-v0")
    assert {type(made), type(made.env)} == {PassiveEnvChecker, OrderEnforcing}
    env, limit = inner_env_and_step_limit(made)
    assert isinstance(env, CalculatorEnv) and limit is None
    bare = CalculatorEnv()
    assert inner_env_and_step_limit(bare) == (bare, None)  # an unwrapped environment is itself


def test_a_time_limit_becomes_the_step_limit():
    env, limit = inner_env_and_step_limit(rg.make("rollgym/Calculator-v0", max_episode_steps=3))
    assert isinstance(env, CalculatorEnv) and limit == 3
    inner = CalculatorEnv()
    assert inner_env_and_step_limit(TimeLimit(TimeLimit(inner, 5), 2)) == (inner, 2)  # the tighter one holds


@pytest.mark.parametrize(
    ("wrap", "name"),
    [
        (lambda e: ClipReward(e, 0.0, 0.5), "gymnasium.wrappers.transform_reward.ClipReward"),
        (lambda e: TransformObservation(e, lambda o: o, None), "TransformObservation"),
        (MyWrapper, "MyWrapper"),
        (lambda e: TimeLimit(MyWrapper(e), 4), "MyWrapper"),  # found under a wrapper that passes
    ],
)
def test_any_other_wrapper_is_refused_by_name(wrap, name):
    wrapped = wrap(rg.make("rollgym/Calculator-v0"))
    with pytest.raises(UsageError, match=name) as caught:
        inner_env_and_step_limit(wrapped)
    assert "async API" in str(caught.value) and "compute_reward" in str(caught.value)  # why, and what to do instead
    with pytest.raises(UsageError, match=name):
        inner_env(wrapped)


def test_check_env_refuses_a_reward_wrapper_and_checks_under_a_time_limit():
    with pytest.raises(UsageError, match="ClipReward"):
        rg.check_env(ClipReward(rg.make("rollgym/Calculator-v0"), 0.0, 0.5))
    rg.check_env(rg.make("rollgym/Calculator-v0", max_episode_steps=2))  # the environment under it passes
