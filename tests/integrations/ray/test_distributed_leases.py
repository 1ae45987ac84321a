"""Deaths on a real Ray cluster that run no code (issue 32, item 2): a rollout actor's process killed with SIGKILL,
and a whole node removed with no grace. The sandboxes their rollouts held end by their own lease within lease + 30 s,
with no process of ours cleaning up (each `die`s with exit 3: its PID 1's doing, not a removal); the run's record,
written by the driver from the actors' streamed events, lists them; the batch completes (the dead actor's rollouts
run again on the other, or `--resume` after the node and its actors are gone)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid

import pytest
from support.lease import LAPSED, DeathWatch, containers_of, seconds_until_ended, wait_dead
from support.ray import TASKS, AlwaysCall, SandboxedEnvFactory

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.sandbox import list_sandboxes
from rollgym.envs.sandbox.host_listing import prune_run
from rollgym.envs.sandbox.lifecycle import HOST
from rollgym.envs.sandbox.record import read_record
from rollgym.errors import ClusterLostError
from rollgym.integrations.ray import RayConfig
from rollgym.limits import Limits
from rollgym.rollouts.generate import generate_to_dir
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.policy import Policy

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LEASE_S = 5.0
LIMITS = Limits(max_turns=6)  # 6 calls of `hold` (0.5 s each): an episode holds its sandbox ~3 s


def _owners(run_id: str) -> set[int]:
    """The pids of the processes with a running sandbox of the run."""
    return {int(row.labels["rollgym.pid"]) for row in list_sandboxes(run_id) if row.state == "running"}


async def _until_two_owners(run_id: str, run: asyncio.Task) -> set[int]:
    """Wait (up to 120 s) until sandboxes of two actor processes run; their pids."""
    for _ in range(1200):
        owners = await asyncio.to_thread(_owners, run_id)
        if len(owners) >= 2 or run.done():
            return owners
        await asyncio.sleep(0.1)
    return set()


async def _batch(base_image, tok, run_id: str, out, config: RayConfig, resume: bool = False):
    return await generate_to_dir(
        env=SandboxedEnvFactory(base_image, ["default"], None, run_id, LEASE_S),
        tasks=TASKS[:2],
        policy=Policy(engine=ScriptedEngine(AlwaysCall(tok, "hold")), tokenizer=tok),
        out=out,
        n=2,
        concurrency=4,
        limits=LIMITS,
        ray=config,
        resume=resume,
    )


async def _ended_by_their_lease(
    watch: DeathWatch, run_id: str, pids: set[int], died_at: float, fault: str, out
) -> set[str]:
    """Every sandbox of the dead owners `pids` that started ends by its own lease within lease + 30 s (exit 3), none
    removed by anyone. Returns those that never started: an owner killed with its create call under way (the daemon
    may finish it a moment later) leaves a container nothing runs in, which the record lists for `prune --run`."""
    owners = {f"{HOST}:{pid}" for pid in pids}
    names = {n for pid in pids for n in await asyncio.to_thread(containers_of, run_id, pid)}
    on_record = {e.name for e in read_record(out) if e.owner in owners}  # the driver wrote the actors' events
    assert names <= on_record, names - on_record
    before = time.monotonic() - died_at  # from the death on
    seconds, never = await asyncio.to_thread(seconds_until_ended, on_record, "default", LEASE_S + 30 - before)
    seconds += before
    print(f"{fault}: its {len(on_record)} sandboxes ended {seconds:.1f} s later ({len(never)} never started)")
    assert seconds < LEASE_S + 30, f"{fault}: still there after {seconds:.0f} s"
    ran = on_record - never
    for _ in range(50):
        if ran & names <= watch.exits.keys():
            break
        await asyncio.sleep(0.1)
    assert {watch.exits.get(n) for n in ran & names} == {LAPSED}, watch.exits
    return never


async def test_an_actor_killed_with_sigkill_loses_its_sandboxes_and_the_batch_completes(
    cluster, tool_tok, base_image, tmp_path
):
    run_id = f"actor9-{uuid.uuid4().hex[:8]}"
    config = RayConfig(actors=2, resources={"spread": 1}, max_retries=1)  # one actor per node
    with DeathWatch(run_id) as watch:
        run = asyncio.create_task(_batch(base_image, tool_tok, run_id, tmp_path, config))
        owners = await _until_two_owners(run_id, run)
        assert len(owners) == 2, f"sandboxes of {len(owners)} actor(s) seen"
        victim = min(owners)
        os.kill(victim, signal.SIGKILL)
        died_at = time.monotonic()
        never = await _ended_by_their_lease(watch, run_id, {victim}, died_at, "Ray actor killed with SIGKILL", tmp_path)
        summary = await asyncio.wait_for(run, timeout=180)  # its rollouts ran again on the other actor
    keys = [r.key for r in read_rollouts(tmp_path / "rollouts.jsonl")]
    assert len(keys) == len(set(keys)) == 4 and summary["rollouts"] == 4
    assert set((await asyncio.to_thread(prune_run, str(tmp_path))).removed) == never
    recorded = read_record(tmp_path)
    assert {e.how for e in recorded if e.owner != f"{HOST}:{victim}"} == {"closed"}  # by the actor that lived
    assert {e.how for e in recorded if e.owner == f"{HOST}:{victim}"} <= {"gone", "pruned"}  # found ended by prune
    assert not await asyncio.to_thread(containers_of, run_id)


async def test_a_node_removed_with_its_actors_loses_their_sandboxes_and_resume_completes(
    cluster, tool_tok, base_image, tmp_path
):
    doomed = cluster.add_node(num_cpus=2, resources={"leased": 2}, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    run_id = f"node-{uuid.uuid4().hex[:8]}"
    with DeathWatch(run_id) as watch:
        run = asyncio.create_task(
            _batch(base_image, tool_tok, run_id, tmp_path, RayConfig(actors=2, resources={"leased": 1}))
        )
        owners = await _until_two_owners(run_id, run)
        assert len(owners) == 2, f"sandboxes of {len(owners)} actor(s) seen"
        await asyncio.to_thread(cluster.remove_node, doomed, False)
        died_at = time.monotonic()
        with pytest.raises(ClusterLostError):
            await asyncio.wait_for(run, timeout=120)
        await asyncio.to_thread(wait_dead, set(owners))  # its workers notice a moment later
        never = await _ended_by_their_lease(
            watch, run_id, set(owners), died_at, "Ray node removed with its actors", tmp_path
        )
    assert set((await asyncio.to_thread(prune_run, str(tmp_path))).removed) == never
    summary = await _batch(base_image, tool_tok, run_id, tmp_path, RayConfig(actors=2), resume=True)
    keys = [r.key for r in read_rollouts(tmp_path / "rollouts.jsonl")]
    assert len(keys) == len(set(keys)) == 4 and summary["rollouts"] == 4
    assert not await asyncio.to_thread(containers_of, run_id)
    assert all(e.ended is not None for e in read_record(tmp_path))
