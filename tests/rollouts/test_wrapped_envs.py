"""A gymnasium-wrapped environment in the rollout loop: a `TimeLimit` truncates the episode after its steps
(`env_truncated`), a wrapper rollgym cannot apply is refused by name, from `rg.rollout` and `rg.run_rollouts`."""

from __future__ import annotations

import gymnasium
import pytest
from gymnasium.envs.registration import WrapperSpec
from gymnasium.wrappers import ClipReward, TimeLimit

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import UsageError

TASK = {"task_id": "calc-1", "question": "What is (2 + 3) * 4?", "answer": 20}
CLIPPED = "rollgym/ClippedCalculator-v0"


@pytest.fixture
def clipped_id():
    """An id whose registration adds a reward wrapper (gymnasium's `additional_wrappers`), as a user's could."""
    gymnasium.register(
        id=CLIPPED,
        entry_point="rollgym.envs.builtin.calculator:CalculatorEnv",
        additional_wrappers=(
            WrapperSpec("ClipReward", "gymnasium.wrappers:ClipReward", {"min_reward": 0.0, "max_reward": 0.5}),
        ),
    )
    try:
        yield CLIPPED
    finally:
        del gymnasium.registry[CLIPPED]


def policy(tool_tok, say) -> rg.Policy:
    script = [say.call("add", a=2, b=3), say.call("multiply", a=5, b=4), say.call("submit", answer=20)]
    return rg.Policy(engine=ScriptedEngine(script), tokenizer=tool_tok)


@pytest.mark.parametrize(
    "make_env",
    [
        lambda: rg.make("rollgym/Calculator-v0", max_episode_steps=2),
        lambda: TimeLimit(CalculatorEnv(), max_episode_steps=2),
    ],
    ids=["make(max_episode_steps=2)", "TimeLimit(env, 2)"],
)
async def test_a_time_limit_truncates_the_episode_after_its_steps(tool_tok, say, make_env):
    r = await rg.rollout(make_env(), policy(tool_tok, say), TASK)
    assert r.error is None and r.stop_reason == "env_truncated" and r.truncated
    assert [t.tool_calls[0].name for t in r.turns] == ["add", "multiply"]  # the third step (submit) never ran
    assert r.reward == 0.0 and r.reward_components == {"correct": 0.0, "submitted": 0.0}  # scored where it stopped


async def test_a_time_limit_past_the_episode_changes_nothing(tool_tok, say):
    r = await rg.rollout(rg.make("rollgym/Calculator-v0", max_episode_steps=3), policy(tool_tok, say), TASK)
    assert r.stop_reason == "env_terminated" and r.reward == 1.0  # the environment ended it on the last step


async def test_run_rollouts_keeps_the_time_limit_of_its_env_kwargs(tool_tok, say):
    rollouts = await rg.run_rollouts(
        "rollgym/Calculator-v0", [TASK], policy(tool_tok, say), env_kwargs={"max_episode_steps": 1}
    )
    assert [(r.stop_reason, len(r.turns)) for r in rollouts] == [("env_truncated", 1)]


async def test_rollout_refuses_a_reward_wrapper_by_name(tool_tok, say):
    with pytest.raises(UsageError, match="ClipReward wraps this environment"):
        await rg.rollout(ClipReward(rg.make("rollgym/Calculator-v0"), 0.0, 0.5), policy(tool_tok, say), TASK)


async def test_rollout_refuses_a_registered_reward_wrapper_by_name(tool_tok, say, clipped_id):
    with pytest.raises(UsageError, match="ClipReward"):
        await rg.rollout(clipped_id, policy(tool_tok, say), TASK)


async def test_run_rollouts_refuses_a_reward_wrapper_by_name(tool_tok, say, clipped_id):
    with pytest.raises(UsageError, match="ClipReward"):  # the whole call, before any rollout
        await rg.run_rollouts(clipped_id, [TASK], policy(tool_tok, say))
    # a factory's environment is seen only when a job makes it: each such job is that error, never run unwrapped
    rollouts = await rg.run_rollouts(lambda: ClipReward(CalculatorEnv(), 0.0, 0.5), [TASK], policy(tool_tok, say), n=2)
    assert [r.stop_reason for r in rollouts] == ["error", "error"] and not any(r.turns for r in rollouts)
    assert {r.error.type for r in rollouts} == {"UsageError"} and "ClipReward" in rollouts[0].error.message
