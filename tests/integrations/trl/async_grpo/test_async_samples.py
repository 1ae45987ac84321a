"""Rollouts as TRL's `RolloutSample`s: GRPO advantages, the token-exact row, and a group scored by reward functions
called as TRL calls them (sync and async, None for what they cannot score)."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.trl.async_grpo.samples import group_advantages, to_sample, trainable
from rollgym.integrations.trl.async_grpo.scoring import score_group
from rollgym.integrations.trl.rollout_func import env_reward
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy

TASK = CalculatorEnv.default_tasks(1)[0]


@pytest.fixture(scope="module")
def group(tool_tok, say):
    script = [say.call("add", a=1, b=2), say.call("submit", answer=TASK["answer"]), say.text("no idea")]
    policy = Policy(engine=ScriptedEngine(script, logprob=-0.75), tokenizer=tool_tok)
    return asyncio.run(
        run_rollouts("rollgym/Calculator-v0", [TASK], policy, n=2, concurrency=1, limits=Limits(max_turns=4))
    )


def test_group_advantages_follow_trl():
    assert group_advantages([1.0, 0.0]) == pytest.approx([1.0, -1.0], abs=1e-6)
    assert group_advantages([None, 2.0, 2.0]) == [0.0, 0.0, 0.0]  # unscored: 0; equal rewards: no signal
    assert group_advantages([None, None]) == [0.0, 0.0] and group_advantages([float("nan"), 1.0])[0] == 0.0


def test_a_sample_is_the_rollout_token_for_token(group):
    rollout = group[0]
    sample = to_sample(rollout, advantage=0.5, group_id=7, model_version=3, metrics={"reward": 1.0})
    view = rollout.token_view()
    n = len(view["prompt_ids"])
    assert sample.input_ids.tolist() == view["prompt_ids"] + view["completion_ids"]
    assert sample.input_ids.dtype == np.int64 and sample.old_log_probs.dtype == np.float32
    assert sample.completion_mask.tolist() == [0] * n + view["env_mask"]
    sampled = [lp for lp, m in zip(sample.old_log_probs.tolist(), sample.completion_mask.tolist(), strict=True) if m]
    assert sampled == [-0.75] * sum(view["env_mask"]) and all(
        lp == 0.0 for lp, m in zip(sample.old_log_probs.tolist(), sample.completion_mask.tolist(), strict=True) if not m
    )
    assert (sample.advantage, sample.group_id, sample.model_version) == (0.5, 7, 3)
    assert sample.prompt == rollout.initial_messages and sample.completion[0]["role"] == "assistant"
    assert trainable(rollout)


def test_a_group_is_scored_by_sync_and_async_reward_functions(group):
    seen = {}

    def by_turns(completions, prompts, rollgym_turns, answer, **kwargs):  # a task column arrives, as in TRL
        seen.update(n=len(completions), answer=answer, prompt_roles=[m["role"] for m in prompts[0]])
        return [0.1 * t for t in rollgym_turns]

    async def unsure(completions, **kwargs):
        return [None, 0.25]

    totals, per_func = asyncio.run(score_group(group, TASK, [env_reward, by_turns, unsure], pad_id=0))
    assert per_func["env_reward"] == [1.0, 0.0] and per_func["unsure"] == [None, 0.25]
    assert totals[0] == pytest.approx(1.0 + 0.1 * len(group[0].turns))
    assert totals[1] == pytest.approx(0.0 + 0.1 * len(group[1].turns) + 0.25)
    assert seen == {"n": 2, "answer": [TASK["answer"]] * 2, "prompt_roles": ["system", "user"]}
    totals, _ = asyncio.run(score_group(group, TASK, [unsure], pad_id=0))
    assert totals[0] is None and not math.isnan(totals[1])
