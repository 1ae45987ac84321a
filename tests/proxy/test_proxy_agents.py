"""`agent_rollout_func`: sync, async and subprocess agents, each on its own session; crashes become errored rows."""

from __future__ import annotations

import json

import openai
import pytest
from support.proxy import two_call_agent as sync_agent

from rollgym.engines.scripted import ScriptedEngine
from rollgym.integrations.trl.rollout_func import agent_rollout_func
from rollgym.rollouts.policy import Policy


async def async_agent(row, base_url, api_key):
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "x", max_retries=0)
    out = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": row["question"]}])
    return out.choices[0].message.content


def crashing_agent(row, base_url, api_key):
    openai.OpenAI(base_url=base_url, api_key="x").chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}]
    )
    raise RuntimeError("the agent fell over")


def reward(row, output, rollout):
    return (float(output == row["answer"]), {"answered": float(bool(output))})


@pytest.fixture()
def engine(scripts):
    return ScriptedEngine(lambda prompt, sampling: scripts.text("42"))


@pytest.mark.parametrize("agent", [sync_agent, async_agent])
def test_agents_become_token_exact_trl_rows(engine, ptok, agent):
    rows = [{"task_id": f"q{i}", "question": f"q{i}?", "answer": "42"} for i in range(3)]
    prompts = [json.dumps(rows[0]), json.dumps(rows[0]), json.dumps(rows[1]), json.dumps(rows[2])]
    func = agent_rollout_func(agent, reward, policy=Policy(engine=engine, tokenizer=ptok), concurrency=2)
    cols = func(prompts, None)
    assert cols["reward"] == [1.0, 1.0, 1.0, 1.0] and cols["reward_answered"] == [1.0] * 4
    rollouts = func.last_rollouts
    assert [r.sample_index for r in rollouts] == [0, 1, 0, 0] and rollouts[0].group_id == rollouts[1].group_id
    assert len({s.id for s in func.last_sessions}) == 4
    expected_turns = 2 if agent is sync_agent else 1
    for r, c in zip(rollouts, cols["completion_ids"], strict=True):
        assert r.error is None and len(r.turns) == expected_turns and r.token_exact
        assert c == r.token_view()["completion_ids"]


def test_a_crashing_agent_is_an_errored_row_not_a_crashed_batch(engine, ptok):
    from rollgym.integrations.trl.rollout_func import env_reward

    def agent(row, base_url, api_key):
        return (crashing_agent if row["task_id"] == "bad" else sync_agent)(row, base_url, api_key)

    rows = [{"task_id": "good", "question": "?", "answer": "42"}, {"task_id": "bad", "question": "?", "answer": "42"}]
    func = agent_rollout_func(agent, reward, policy=Policy(engine=engine, tokenizer=ptok))
    cols = func([json.dumps(r) for r in rows], None)
    good, bad = func.last_rollouts
    assert good.error is None and good.reward == 1.0
    assert (
        bad.error.category == "agent" and "fell over" in bad.error.message and bad.turns
    )  # its call is still recorded
    assert env_reward(reward=cols["reward"], rollgym_error=cols["rollgym_error"]) == [1.0, None]


def test_concurrency_is_bounded(engine, ptok):
    import asyncio

    state = {"now": 0, "max": 0}

    async def agent(row, base_url, api_key):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.05)
        out = await async_agent(row, base_url, api_key)
        state["now"] -= 1
        return out

    func = agent_rollout_func(agent, policy=Policy(engine=engine, tokenizer=ptok), concurrency=2)
    func([json.dumps({"task_id": f"t{i}", "question": "?"}) for i in range(6)], None)
    assert state["max"] == 2 and all(r.error is None and len(r.turns) == 1 for r in func.last_rollouts)
