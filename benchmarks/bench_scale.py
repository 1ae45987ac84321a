"""Scaling out: rollouts on Ray actors vs one process (issue 14).

Turns/s with an instant engine (a scripted policy calling `add` every turn) and the Calculator: one process;
1, 2 and 4 Ray actors on this machine; 2 actors on 2 simulated nodes (`ray.cluster_utils.Cluster`). (Issue 14
measured the old hand-written process pool beside them; its code is gone, its figures are in docs/scale.md.)
This VM's speed drifts 2x, so the configurations run interleaved, round after round, and each is reported as a
ratio to one process's run of the same round (median over rounds). Actors are kept warm across calls (`keep_actors`),
as a trainer or a long-running driver would; one row shows a cold call (new actors) as well.
Dispatch overhead: the driver's CPU per rollout (every thread of the driver process, Ray's included) and
the wall time one actor adds per rollout over one process (at concurrency 128, where it includes two
processes sharing the cores, and at concurrency 1, the latency of a job's trip to the actor and back). Last row: N rollouts all at once across the 2
nodes, with the error count (the issue asks for 10,000 with 0 errors). Then sandbox starts per second with one
Docker host vs two (`bench_hosts.py`, the tests' second dockerd; `--sandboxes 0` skips it).
Run: `.venv/bin/python benchmarks/bench_scale.py [--rounds 3] [--rollouts 10000]` (from a git checkout).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ray
from ray.cluster_utils import Cluster

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.ray import RayConfig, dispatch
from rollgym.integrations.ray.pool import drop_pool
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

TURNS = 8
PULLED = "Ray, 2 actors, pulled"  # the Ray Client (ray://) path: batches pulled, not streamed
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class CountingAdd:
    """Scripted policy: `add(a=n, b=2)` with n = 1, 2, 3, ... so every tool result differs."""

    def __init__(self, tok):
        self.head = tok.encode('<tool_call>\n{"name": "add", "arguments": {"a": ')
        self.tail = tok.encode(', "b": 2}}\n</tool_call>') + [tok.end_of_turn_id]
        self.digit = {d: tok.encode(d)[0] for d in "0123456789"}
        self.n = 0

    def __call__(self, prompt, sampling):
        self.n += 1
        return self.head + [self.digit[d] for d in str(self.n)] + self.tail


async def measure(tok, mode: str, rollouts: int, concurrency: int, config: RayConfig | None = None) -> dict:
    """One call: turns/s, wall, the driver's CPU, errors."""
    tasks = CalculatorEnv.default_tasks(rollouts)
    policy = Policy(engine=ScriptedEngine(CountingAdd(tok)), tokenizer=tok)
    seen = {"turns": 0, "errors": 0}

    def on_result(r) -> None:
        seen["turns"] += len(r.turns)
        seen["errors"] += r.error is not None

    gc.collect()
    cpu0, t0 = time.process_time(), time.perf_counter()
    await run_rollouts(
        "rollgym/Calculator-v0",
        tasks,
        policy,
        n=1,
        concurrency=concurrency,
        keep=False,
        limits=Limits(max_turns=TURNS),
        ray=config,
        on_result=on_result,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "turns_per_s": seen["turns"] / wall,
        "wall_s": wall,
        "cpu_ms_per_rollout": cpu * 1e3 / rollouts,
        "wall_ms_per_rollout": wall * 1e3 / rollouts,
        "errors": seen["errors"],
        "turns": seen["turns"],
    }


streamed_here = dispatch.through_client  # this driver's own answer, put back after the pulled row


async def main(rounds: int, rollouts: int, big: int, concurrency: int) -> None:
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    tok.certify()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 5, "resources": {"local": 4, "spread": 1}})
    cluster.add_node(num_cpus=2, resources={"spread": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    configs = {
        "one process": None,
        "Ray, 1 actor": RayConfig(actors=1, resources={"local": 1}, keep_actors=True),
        "Ray, 2 actors": RayConfig(actors=2, resources={"local": 1}, keep_actors=True),
        "Ray, 4 actors": RayConfig(actors=4, resources={"local": 1}, keep_actors=True),
        "Ray, 2 nodes x 1 actor": RayConfig(actors=2, resources={"spread": 1}, keep_actors=True),
        PULLED: RayConfig(actors=2, resources={"local": 1}, keep_actors=True),
    }

    async def one(name: str, n: int = rollouts) -> dict:
        config = configs[name]
        if name == PULLED:  # what a driver on Ray Client (ray://) does, in this driver: `open` + `pull` calls
            dispatch.through_client = lambda: True
            try:
                return await measure(tok, name, n, concurrency, config=config)
            finally:
                dispatch.through_client = streamed_here
        return await measure(tok, name, n, concurrency, config=config)

    for name in configs:  # warm-up: imports, actor start-up
        await one(name, 64)
    results: dict[str, list[dict]] = {name: [] for name in configs}
    ratios: dict[str, list[float]] = {name: [] for name in configs}
    cold: list[float] = []
    for r in range(rounds):
        row = {name: await one(name) for name in configs}
        base = row["one process"]["turns_per_s"]
        for name, m in row.items():
            results[name].append(m)
            ratios[name].append(m["turns_per_s"] / base)
        drop_pool()  # a cold call: 2 new actors, start-up included, then back to warm ones
        m = await measure(tok, "cold", rollouts, concurrency, config=configs["Ray, 2 actors"])
        cold.append(m["turns_per_s"] / base)
        await one("Ray, 2 actors", 64)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)

    print(
        f"\n{rollouts} rollouts x {TURNS} turns, concurrency {concurrency}, instant engine; {rounds} interleaved rounds "
        f"on {os.cpu_count()} cores; ratio = turns/s over one process's in the same round (median)"
    )
    print(
        f"{'configuration':<26} {'turns/s (median)':>16} {'x one proc':>10} {'driver CPU ms/rollout':>22} {'errors':>6}"
    )
    for name in configs:
        ms = results[name]
        print(
            f"{name:<26} {statistics.median(m['turns_per_s'] for m in ms):>16,.0f} {statistics.median(ratios[name]):>10.2f} "
            f"{statistics.median(m['cpu_ms_per_rollout'] for m in ms):>22.2f} {sum(m['errors'] for m in ms):>6}"
        )
    print(f"{'Ray, 2 actors, cold call':<26} {'':>16} {statistics.median(cold):>10.2f}")
    added = [
        b["wall_ms_per_rollout"] - a["wall_ms_per_rollout"]
        for a, b in zip(results["one process"], results["Ray, 1 actor"], strict=True)
    ]
    print(
        f"\ndispatch overhead: driver CPU {statistics.median(m['cpu_ms_per_rollout'] for m in results['Ray, 2 actors']):.2f} "
        f"ms per rollout (2 actors); wall time 1 actor adds over one process: {statistics.median(added):.2f} ms per "
        "rollout (target <= 2 ms)"
    )
    lat = {name: [] for name in ("one process", "Ray, 1 actor")}
    for _ in range(rounds):  # one rollout at a time: the latency a job's trip to an actor and back adds
        for name in lat:
            m = await measure(tok, name, 64, 1, config=configs[name])
            lat[name].append(m["wall_ms_per_rollout"])
    added_lat = statistics.median(b - a for a, b in zip(lat["one process"], lat["Ray, 1 actor"], strict=True))
    print(
        f"latency at concurrency 1: one process {statistics.median(lat['one process']):.2f} ms per rollout, 1 actor "
        f"{statistics.median(lat['Ray, 1 actor']):.2f} ms: dispatch adds {added_lat:.2f} ms per rollout"
    )
    if big:
        m = await measure(tok, "big", big, big, config=configs["Ray, 2 nodes x 1 actor"])
        print(
            f"{big:,} concurrent rollouts across 2 nodes: {m['turns']:,} turns in {m['wall_s']:.1f} s "
            f"({m['turns_per_s']:,.0f} turns/s), errors {m['errors']}"
        )
    drop_pool()
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rollouts", type=int, default=512, help="rollouts per measured call")
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument(
        "--big", type=int, default=10_000, help="rollouts for the all-at-once row across 2 nodes (0: skip)"
    )
    parser.add_argument("--sandboxes", type=int, default=12, help="sandboxes per burst, 1 vs 2 Docker hosts (0: skip)")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.rollouts, args.big, args.concurrency))
    if args.sandboxes:
        import bench_hosts  # this folder: the same measurement as `bench_hosts.py`, in this run

        bench_hosts.run(args.sandboxes, args.rounds)
