"""τ²-bench domains through rollgym: `rg.check_env` on each id; replaying a task's gold actions (the agent's, and the
user's phone actions in telecom) scores 1 per τ²'s evaluation in every domain, a wrong trajectory less; rollgym's
reward equals τ²'s own `evaluate_simulation` of the same trajectory; solo mode; the task rows."""

from __future__ import annotations

import pytest
from conftest import first_tasks, gold_actions, gold_policy, gold_user, is_write

import rollgym as rg
from rollgym.envs.suites.tau2 import DOMAINS, env_id


@pytest.mark.slow  # ~10-30 s a domain: τ²'s database loaded for each episode and twice more for its evaluation
@pytest.mark.parametrize("domain", DOMAINS)
async def test_gold_actions_score_1_and_a_wrong_trajectory_less(domain, tool_tok, say):
    writes = [t for t in first_tasks(domain, 30) if any(map(is_write, gold_actions(domain, t, "assistant")))]
    for task_id in [*first_tasks(domain, 1), *writes[:1]]:
        kwargs = {"user_model": gold_user(domain, task_id)}
        [right] = await rg.run_rollouts(
            env_id(domain), [{"task_id": task_id}], gold_policy(tool_tok, say, domain, task_id), env_kwargs=kwargs
        )
        assert right.error is None and right.reward == 1.0, (task_id, right.error)
    task_id = writes[0]
    [wrong] = await rg.run_rollouts(
        env_id(domain),
        [{"task_id": task_id}],
        gold_policy(tool_tok, say, domain, task_id, skip_last=True),
        env_kwargs={"user_model": gold_user(domain, task_id)},
    )
    assert wrong.error is None and wrong.reward < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
async def test_the_reward_is_tau2s_own_evaluation_of_the_trajectory(domain):
    """The episode's τ² `SimulationRun`, saved as JSON and read back, evaluated by τ²'s `evaluate_simulation` directly,
    gives the reward rollgym's step returned: for a gold trajectory and a wrong one."""
    from tau2.data_model.simulation import SimulationRun
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    from rollgym.envs.suites.tau2.tasks import domain_tasks

    task_id = next(t for t in first_tasks(domain, 30) if any(map(is_write, gold_actions(domain, t, "assistant"))))
    for skip_last in (False, True):
        actions = gold_actions(domain, task_id, "assistant")
        if skip_last:
            actions = [a for a in actions if not is_write(a)]
        env = rg.make(env_id(domain), user_model=gold_user(domain, task_id)).unwrapped
        await env.areset(options={"task": {"task_id": task_id}})
        for i, action in enumerate(actions):
            call = {"id": f"c{i}", "type": "function", "function": {"name": action.name, "arguments": action.arguments}}
            await env.astep({"role": "assistant", "content": None, "tool_calls": [call]})
        reward, done = 0.0, False
        for _ in range(5):
            _, reward, done, _, info = await env.astep({"role": "assistant", "content": "Done. Anything else?"})
            if done:
                break
        assert done and "error" not in info
        run = SimulationRun.model_validate_json(env.simulation.simulation_run().model_dump_json())
        theirs = evaluate_simulation(run, domain_tasks(domain)[task_id], EvaluationType.ALL, False, domain)
        assert reward == theirs.reward == (0.0 if skip_last else 1.0)
        await env.aclose()


async def test_solo_mode_telecom_gold_actions_score_1(tool_tok, say):
    """Solo mode: no user; the agent has the phone's tools too, reads the ticket, and calls `done`."""
    from rollgym.envs.suites.tau2.tasks import domain_tasks

    task_id = next(t for t, task in domain_tasks("telecom").items() if task.ticket)
    actions = [*gold_actions("telecom", task_id, "assistant"), *gold_actions("telecom", task_id, "user")]
    script = [say.call(a.name, **a.arguments) for a in actions] + [say.call("done")]
    policy = rg.Policy(engine=rg.engines.scripted.ScriptedEngine(script), tokenizer=tool_tok)
    [rollout] = await rg.run_rollouts("tau2/telecom-v0", [{"task_id": task_id}], policy, env_kwargs={"solo_mode": True})
    assert rollout.error is None and rollout.reward == 1.0
    with pytest.raises(rg.UsageError, match="no solo mode"):
        rg.make("tau2/airline-v0", solo_mode=True)


def test_task_rows_come_from_tau2s_task_files():
    counts = {domain: len(rg.load_tasks(env_id(domain), f"tau2/{domain}")) for domain in DOMAINS}
    assert counts == {"airline": 50, "retail": 114, "telecom": 114}
    env = rg.make("tau2/retail-v0").unwrapped
    assert type(env).default_tasks(2, seed=113) == [
        {"task_id": "113", "domain": "retail"},
        {"task_id": "0", "domain": "retail"},
    ]
