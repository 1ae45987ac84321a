"""Bad input to the τ² environments: an unknown task id is the rollout's error naming the closest ids; τ²'s evaluator
raising is a `ScorerError` recorded with the rollout while the batch goes on; an unreachable user model is an
infrastructure failure (category `engine`), never a reward of 0."""

from __future__ import annotations

import pytest
from conftest import gold_policy, gold_user

import rollgym as rg
from rollgym.envs.suites.tau2.tasks import domain_tasks

TELECOM_TASK = next(iter(domain_tasks("telecom")))


async def test_an_unknown_task_id_says_did_you_mean(tool_tok, say):
    policy = gold_policy(tool_tok, say, "airline", "0")
    [bad, good] = await rg.run_rollouts(
        "tau2/airline-v0",
        [{"task_id": "01"}, {"task_id": "0"}],
        policy,
        env_kwargs={"user_model": gold_user("airline", "0")},
        concurrency=1,
    )
    assert bad.error is not None and bad.error.category == "environment"
    assert "has no task '01'" in bad.error.message and "Did you mean" in bad.error.message
    assert good.error is None and good.reward == 1.0


async def test_tau2s_evaluator_raising_is_the_rollouts_scorer_error_and_the_batch_goes_on(tool_tok, say):
    """A τ² task whose environment assertion names a function τ²'s phone does not have: τ²'s own evaluator raises."""
    tasks = domain_tasks("telecom")
    broken = tasks[TELECOM_TASK].model_copy(deep=True)
    broken.id = "broken-assertion"
    broken.evaluation_criteria.env_assertions[0].func_name = "no_such_assertion"
    tasks[broken.id] = broken
    try:
        [bad, good] = await rg.run_rollouts(
            "tau2/telecom-v0",
            [{"task_id": broken.id}, {"task_id": TELECOM_TASK}],
            gold_policy(tool_tok, say, "telecom", TELECOM_TASK),
            env_kwargs={"user_model": gold_user("telecom", TELECOM_TASK)},
            concurrency=1,
        )
    finally:
        del tasks[broken.id]
    assert bad.error is not None and bad.error.type == "ScorerError" and bad.reward == 0.0
    assert "evaluate_simulation" in bad.error.message
    assert good.error is None and good.reward == 1.0


async def test_an_unreachable_user_model_is_an_infrastructure_failure(tool_tok, say):
    [rollout] = await rg.run_rollouts(
        "tau2/telecom-v0",
        [{"task_id": TELECOM_TASK}],
        gold_policy(tool_tok, say, "telecom", TELECOM_TASK),
        env_kwargs={"user_model": "openai:http://127.0.0.1:9/v1#no-model"},
    )
    assert rollout.error is not None and rollout.error.category == "engine", rollout.error
    assert "user model" in rollout.error.message


def test_a_user_model_that_is_neither_a_spec_nor_a_chat_model_is_refused():
    env = rg.make("tau2/airline-v0", user_model=42).unwrapped
    with pytest.raises(rg.UsageError, match="chat model"):
        env.reset(options={"task": {"task_id": "0"}})
