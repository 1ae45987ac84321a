"""Sandbox placement across the actors of a run (issue 14): one count per Docker host for the whole cluster
(`integrations/ray/ledger.py`), so `max_per_host` holds across actors, on two real daemons. Each
daemon is polled for the run's containers while the batch runs."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import ray
from support.docker2 import DOCKER2, start_docker2
from support.ray import TASKS, AlwaysCall, SandboxedEnvFactory

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.sandbox import DEFAULT_HOST, list_containers
from rollgym.integrations.ray import RayConfig
from rollgym.integrations.ray.ledger import HostLedger
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy

pytestmark = pytest.mark.docker


async def peak_per_host(run_id: str, stop: asyncio.Event) -> dict[str, int]:
    """The most containers of the run seen at once on each daemon (asked the daemons, every 0.1 s)."""
    peak = {DEFAULT_HOST: 0, DOCKER2: 0}
    while not stop.is_set():
        for host in peak:
            peak[host] = max(peak[host], len(await asyncio.to_thread(list_containers, run_id, host)))
        await asyncio.sleep(0.1)
    return peak


async def test_the_cap_per_host_holds_across_the_actors_of_a_run(cluster, docker_engine, base_image, tool_tok):
    await asyncio.to_thread(start_docker2)
    run_id = f"ledger-{uuid.uuid4().hex[:8]}"
    # 2 actors (one per node) x 2 slots each want 4 sandboxes at once; the cap allows 1 per host, 2 in all.
    # Counted per process, each actor would run one on each host: 2 per host.
    factory = SandboxedEnvFactory(base_image, [DEFAULT_HOST, DOCKER2], 1, run_id)
    policy = Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "hold")), tokenizer=tool_tok)
    stop = asyncio.Event()
    watch = asyncio.create_task(peak_per_host(run_id, stop))
    try:
        rollouts = await asyncio.wait_for(
            run_rollouts(
                factory,
                TASKS[:4],
                policy,
                n=2,
                concurrency=4,
                limits=Limits(max_turns=2),
                ray=RayConfig(actors=2, resources={"spread": 1}),
            ),
            300,
        )
    finally:
        stop.set()
        peak = await watch
    assert [r.error for r in rollouts if r.error is not None] == []
    hosts_used = {r.turns[0].env_messages[0]["content"] for r in rollouts}
    assert hosts_used == {DEFAULT_HOST, DOCKER2}
    assert peak == {DEFAULT_HOST: 1, DOCKER2: 1}, f"at most 1 sandbox per host at once, cluster-wide: {peak}"
    assert list_containers(run_id=run_id, docker_host=[DEFAULT_HOST, DOCKER2]) == []
    named = ray.util.list_named_actors(all_namespaces=True)
    assert not [a for a in named if a["name"].startswith("rollgym-hosts-")], f"the ledger outlived its call: {named}"


async def test_the_ledger_frees_a_dead_owners_slots_and_waits_for_a_slot():
    ledger = HostLedger()
    assert await ledger.take("a", ["h1", "h2"], 1) == "h1"
    assert await ledger.take("b", ["h1", "h2"], 1) == "h2"
    assert await ledger.take("b", ["h1", "h2"], 1, wait_s=0.1) is None  # both at the cap
    waiting = asyncio.create_task(ledger.take("b", ["h1", "h2"], 1, wait_s=5))
    await asyncio.sleep(0.1)
    await ledger.drop("a")  # a died: its slot on h1 is free, and the waiting take gets it
    assert await asyncio.wait_for(waiting, 2) == "h1"
    await ledger.give("b", "h2")
    await ledger.give("b", "h2")  # more than it holds: ignored
    assert ledger.load() == {"h1": 1}


async def test_a_take_cancelled_while_waiting_gives_its_slot_back(cluster):
    from rollgym.integrations.ray.ledger import RayLedger, _existing, end_ledger

    call = uuid.uuid4().hex[:12]
    ledger = RayLedger(call, "owner")
    try:
        assert await ledger.atake(["h1"], 1) == "h1"
        waiting = asyncio.create_task(ledger.atake(["h1"], 1))  # waits in the ledger: h1 is at its cap
        await asyncio.sleep(0.2)
        waiting.cancel()  # a rollout's time limit; the remote take goes on and gets the slot once it is free
        ledger.give("h1")
        handle = _existing(call)
        for _ in range(50):
            await asyncio.sleep(0.1)
            if await handle.load.remote() == {}:
                break
        assert await handle.load.remote() == {}, "the cancelled take's slot was never given back"
    finally:
        end_ledger(call)
