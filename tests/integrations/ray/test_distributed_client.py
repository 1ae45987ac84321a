"""The pull path a driver on Ray Client (`ray://`) takes, since Ray Client has no streaming methods: forced here
in a driver on the real 2-node cluster, it gives the same rollouts as one process and survives a node killed
mid-batch. (`rollgym generate --ray ray://...` through the head's real Ray Client server: test_distributed_cli.)"""

from __future__ import annotations

import asyncio

import pytest
from support.ray import TASKS, Solver, token_views

from rollgym.engines.scripted import ScriptedEngine
from rollgym.integrations.ray import RayConfig, dispatch
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy


@pytest.fixture
def pulling(monkeypatch):
    """The driver reads the actors as it does through Ray Client (`open`, then `pull` until None)."""
    monkeypatch.setattr(dispatch, "through_client", lambda: True)
    calls = []
    real = dispatch._payloads

    async def counted(member, slots):
        async for payload in real(member, slots):
            calls.append(slots)
            yield payload

    monkeypatch.setattr(dispatch, "_payloads", counted)
    return calls


def solver(tok, delay_s: float = 0.0):
    return Policy(engine=ScriptedEngine(Solver(tok), delay_s=delay_s), tokenizer=tok)


async def test_pulled_results_equal_one_process(cluster, tool_tok, pulling):
    one = await run_rollouts("rollgym/Calculator-v0", TASKS, solver(tool_tok), n=2, concurrency=4)
    two = await run_rollouts(
        "rollgym/Calculator-v0",
        TASKS,
        solver(tool_tok),
        n=2,
        concurrency=4,
        ray=RayConfig(actors=2, resources={"spread": 1}),
    )
    assert pulling, "the pull path was not taken"
    assert all(r.error is None and r.reward == 1.0 for r in two)
    assert token_views(two) == token_views(one)


async def test_a_node_killed_while_pulling_loses_only_what_its_actor_held(cluster, tool_tok, pulling):
    victim = cluster.add_node(num_cpus=2, resources={"pair": 1}, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    seen = []
    batch = asyncio.create_task(
        run_rollouts(
            "rollgym/Calculator-v0",
            TASKS,
            solver(tool_tok, 0.25),
            n=4,
            concurrency=4,
            ray=RayConfig(actors=2, resources={"pair": 1}, max_retries=1),
            on_result=seen.append,
        )
    )
    while len(seen) < 3:
        await asyncio.sleep(0.05)
    await asyncio.to_thread(cluster.remove_node, victim, False)
    rollouts = await asyncio.wait_for(batch, timeout=120)
    keys = [(r.task_id, r.sample_index) for r in seen]
    assert len(keys) == len(set(keys)) == 24  # every (task, sample) exactly once
    assert all(r.error is None and r.reward == 1.0 for r in rollouts)  # what it held ran again on the head
