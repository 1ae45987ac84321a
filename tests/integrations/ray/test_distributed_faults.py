"""Faults on a real Ray cluster: a node killed mid-batch loses only what its actor held (retried, or recorded as
`WorkerDied` naming the node); losing every actor ends the run with `ClusterLostError` and a resumable file."""

from __future__ import annotations

import asyncio

import pytest
from support.ray import TASKS, Solver

from rollgym.engines.scripted import ScriptedEngine
from rollgym.errors import ClusterLostError
from rollgym.integrations.ray import RayConfig
from rollgym.integrations.ray.dispatch import _Run
from rollgym.integrations.ray.pool import Member
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.generate import generate_to_dir
from rollgym.rollouts.jobs import RolloutJob
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.policy import Policy


def slow_solver(tok, delay_s: float = 0.25):
    return Policy(engine=ScriptedEngine(Solver(tok), delay_s=delay_s), tokenizer=tok)


async def kill_after(cluster, node, seen: list, results: int) -> None:
    """Remove `node` (no grace: its processes are killed) once `results` rollouts have finished."""
    while len(seen) < results:
        await asyncio.sleep(0.05)
    await asyncio.to_thread(cluster.remove_node, node, False)


async def test_a_node_killed_mid_batch_loses_only_what_its_actor_held(cluster, tool_tok):
    victim = cluster.add_node(
        num_cpus=2, resources={"pair": 1}, node_ip_address="127.0.0.1"
    )  # one actor here, one on the head
    cluster.wait_for_nodes()
    seen = []
    config = RayConfig(actors=2, resources={"pair": 1}, max_retries=0)
    batch = asyncio.create_task(
        run_rollouts(
            "rollgym/Calculator-v0", TASKS, slow_solver(tool_tok), n=4, concurrency=4, ray=config, on_result=seen.append
        )
    )
    await kill_after(cluster, victim, seen, 3)
    rollouts = await asyncio.wait_for(batch, timeout=120)
    keys = [(r.task_id, r.sample_index) for r in seen]
    assert len(keys) == len(set(keys)) == 24  # every (task, sample) exactly once
    lost = [r for r in rollouts if r.error is not None]
    assert lost, "the killed node's actor held rollouts: they must be reported"
    for r in lost:
        assert r.error.category == "internal" and r.error.type == "WorkerDied" and r.stop_reason == "error"
        assert victim.node_id[:16] in r.error.message  # names the node
    assert all(r.reward == 1.0 for r in rollouts if r.error is None)
    assert len(lost) <= 3 + 1  # only what the actor held: its 2 slots and 1 queued (+1 in flight to it)


def test_a_dead_actors_rollouts_are_retried_then_recorded():
    job = RolloutJob(0, "t0", 1, {})
    reported = []
    run = _Run([], RayConfig(max_retries=1), "env", "", lambda ti, si, r: reported.append(r))
    for attempt in range(2):
        run.live[attempt] = Member(actor=None, where={"node_ip": "10.0.0.7", "node_id": "abc123", "pid": 9})
        run.held[attempt] = {(0, 1): job}
        run.lost(attempt, RuntimeError("gone"))
        if attempt == 0:
            assert list(run.pending) == [job] and reported == []  # first loss: run again elsewhere
            run.pending.clear()
    assert len(reported) == 1 and reported[0].error.type == "WorkerDied"
    assert "10.0.0.7" in reported[0].error.message and reported[0].task_id == "t0" and reported[0].sample_index == 1


async def test_losing_every_actor_raises_cluster_lost_and_leaves_a_resumable_file(cluster, tool_tok, tmp_path):
    doomed = cluster.add_node(
        num_cpus=2, resources={"doomed": 2}, node_ip_address="127.0.0.1"
    )  # every actor here, none can go elsewhere
    cluster.wait_for_nodes()
    config = RayConfig(actors=2, resources={"doomed": 1}, max_retries=1)
    run = asyncio.create_task(
        generate_to_dir(
            env="rollgym/Calculator-v0",
            tasks=TASKS,
            policy=slow_solver(tool_tok),
            out=tmp_path,
            n=4,
            concurrency=4,
            ray=config,
        )
    )
    path = tmp_path / "rollouts.jsonl"
    while not path.exists() or path.read_text().count("\n") < 3:
        await asyncio.sleep(0.05)
    await asyncio.to_thread(cluster.remove_node, doomed, False)
    with pytest.raises(ClusterLostError, match="resum"):
        await asyncio.wait_for(run, timeout=120)
    first = list(read_rollouts(path))
    assert 3 <= len(first) < 24 and all(r.error is None for r in first)  # what was not run is not written
    summary = await generate_to_dir(
        env="rollgym/Calculator-v0",
        tasks=TASKS,
        policy=slow_solver(tool_tok, 0.0),
        out=tmp_path,
        n=4,
        concurrency=4,
        resume=True,
        ray=RayConfig(actors=2),
    )
    keys = [r.key for r in read_rollouts(path)]
    assert len(keys) == len(set(keys)) == 24 and summary["rollouts"] == 24
