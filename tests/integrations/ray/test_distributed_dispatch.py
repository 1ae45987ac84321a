"""`run_rollouts(ray=...)` on a real 2-node Ray cluster: the same rollouts as one process, both nodes used,
jobs handed out on demand, cancelling releases every environment, start-up failures stop the run."""

from __future__ import annotations

import asyncio

import pytest
import ray
from support.ray import TASKS, AlwaysCall, MarkedEnvFactory, Solver, WhereEnv, token_views

from rollgym.engines.scripted import ScriptedEngine
from rollgym.errors import WorkerStartError
from rollgym.integrations.ray import RayConfig
from rollgym.integrations.ray.actor_spec import split_slots
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy

SPREAD = RayConfig(actors=2, resources={"spread": 1})  # one actor per node


def scripted(tok, script):
    return Policy(engine=ScriptedEngine(script), tokenizer=tok)


async def test_actors_give_the_same_rollouts_as_one_process(cluster, tool_tok):
    seen = []
    one = await run_rollouts("rollgym/Calculator-v0", TASKS, scripted(tool_tok, Solver(tool_tok)), n=2, concurrency=4)
    two = await run_rollouts(
        "rollgym/Calculator-v0",
        TASKS,
        scripted(tool_tok, Solver(tool_tok)),
        n=2,
        concurrency=4,
        ray=SPREAD,
        on_result=seen.append,
    )
    assert len(two) == len(seen) == 12 and all(r.error is None for r in two)
    assert all(r.reward == 1.0 and len(r.turns) == 2 for r in two)
    assert token_views(two) == token_views(one)  # same ids, masks, logprobs, rewards, stop reasons, in the same order
    assert {r.id for r in two} == {r.id for r in seen}


async def test_both_nodes_run_rollouts_and_jobs_go_to_whichever_actor_is_free(cluster, tool_tok, tmp_path):
    # Task 0 holds its actor until tasks 4 and 5 have run; that actor also holds the one job prefetched with it.
    # Every later job must go to the free actor, on the other node, or task 0 waits out its 60 s and they follow.
    gate = str(tmp_path)
    tasks = [dict(t, gate=gate, mark=f"task-{i}") for i, t in enumerate(TASKS)]
    tasks[0]["wait_for"] = ["task-4", "task-5"]
    rollouts = await run_rollouts(
        WhereEnv,
        tasks,
        scripted(tool_tok, AlwaysCall(tool_tok, "where")),
        n=1,
        concurrency=2,
        ray=SPREAD,
        limits=Limits(max_turns=5),
    )
    where = [r.turns[0].env_messages[0]["content"] for r in rollouts]
    assert all(r.error is None for r in rollouts)
    nodes = {w.split()[0] for w in where}
    assert nodes == {n["NodeID"] for n in cluster_nodes()}  # both nodes ran rollouts
    assert where[4] != where[0] and where[5] != where[0]


def cluster_nodes():

    return [n for n in ray.nodes() if n["Alive"]][:2]


async def test_cancelling_stops_every_actor_and_releases_every_environment(cluster, tool_tok, tmp_path):
    seen = []
    batch = asyncio.create_task(
        run_rollouts(
            MarkedEnvFactory(tmp_path),
            TASKS,
            scripted(tool_tok, AlwaysCall(tool_tok, "wait")),
            n=2,
            concurrency=4,
            ray=SPREAD,
            limits=Limits(max_turns=20),
            on_result=seen.append,
        )
    )
    for _ in range(600):  # until both actors have environments up
        await asyncio.sleep(0.05)
        if len({p.name.rsplit("-", 1)[1] for p in tmp_path.glob("setup-*")}) == 2:
            break
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    setups = sorted(p.name.split("-", 1)[1] for p in tmp_path.glob("setup-*"))
    teardowns = sorted(p.name.split("-", 1)[1] for p in tmp_path.glob("teardown-*"))
    assert len({s.rsplit("-", 1)[1] for s in setups}) == 2 and setups == teardowns  # every environment released
    assert seen == []  # nothing finished: 20 turns of 0.3 s each had no time to


async def test_an_actor_that_cannot_start_stops_the_run_with_its_traceback(cluster, tool_tok):
    seen = []
    with pytest.raises(WorkerStartError, match="no-such-model-dir"):
        await run_rollouts(
            "rollgym/Calculator-v0",
            TASKS[:3],
            Policy("hf:/no-such-model-dir", tokenizer=tool_tok),
            ray=SPREAD,
            on_result=seen.append,
        )
    assert seen == []


async def test_an_on_result_that_raises_stops_the_run(cluster, tool_tok):
    def explode(rollout):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await run_rollouts(
            "rollgym/Calculator-v0",
            TASKS,
            scripted(tool_tok, Solver(tool_tok)),
            n=2,
            concurrency=4,
            ray=SPREAD,
            on_result=explode,
        )


def test_concurrency_is_shared_out_exactly():
    assert split_slots(1, 4) == [1]  # never more actors (or rollouts) than the concurrency
    assert split_slots(16, 3) == [6, 5, 5] and split_slots(8, 2) == [4, 4]


def test_a_policy_that_cannot_leave_the_process_fails_before_any_actor_starts(cluster, tool_tok):
    policy = Policy(engine_factory=lambda: ScriptedEngine([]), tokenizer=tool_tok)
    with pytest.raises(Exception, match="cannot leave this process"):
        asyncio.run(run_rollouts("rollgym/Calculator-v0", TASKS[:2], policy, ray=SPREAD))
