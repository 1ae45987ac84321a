"""65,000 concurrent rollouts on one machine: `python benchmarks/bench_concurrency.py [--rollouts 65000]`.

The Calculator through `run_rollouts(concurrency=N)` with N rollouts, every one alive at once, against the instant
OpenAI-compatible server (`peers/instant_server.py`, its own process) through rollgym's `VLLMServerEngine`, whose
connection pool (`max_concurrency`, 64 here) bounds the requests in flight as a real vLLM server's batch would: the
other rollouts are idle, waiting for the engine. Printed:
1. the run: rollouts, turns, errors, wall time, event-loop lag (how late a 10 ms timer fires: p50, p99, max);
2. memory per idle rollout: RSS when all N are alive (a barrier at the first tool call holds each rollout, idle,
   after its first turn, until all N got there; a full collection first) minus before, over N; and, in a second
   run of `--trace` rollouts under `tracemalloc`, the Python heap per rollout, the bytes of the messages each holds,
   and the largest contributors (file:line);
3. what limits it further: the engine's connection pool at `--pools` sizes (each a batch with that many requests in
   flight at once against a server that holds each answer `--pool-hold` seconds): where it breaks and why.
About 6 minutes for the 65,000 rollouts x 2 turns on this 2-core VM, 5 more for the trace, 8 for the pool probe
(answers held 120 s, so that 24,000 requests are all in flight at once: 20 s was shorter than admitting them).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))

from servers import InstantServer  # noqa: E402 - after sys.path holds peers/
from workload import write_instant_ids  # noqa: E402 - after sys.path holds peers/

from rollgym import Limits, Policy, SamplingParams, run_rollouts  # noqa: E402 - after sys.path holds peers/
from rollgym.engines.vllm_server import VLLMServerEngine  # noqa: E402 - after sys.path holds peers/
from rollgym.envs.builtin.calculator import CalculatorEnv  # noqa: E402 - after sys.path holds peers/
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer  # noqa: E402 - after sys.path holds peers/
from rollgym.tokenization.templates import CHATML_TOOLS  # noqa: E402 - after sys.path holds peers/


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


class Watched(CalculatorEnv):
    """The Calculator with a barrier at its first step: no rollout goes past its first tool call until all of them
    have sampled their first turn, so all N are alive at once, idle, each holding one turn. `on_all_alive` runs then
    (after a full garbage collection, so what it sees is what the rollouts hold)."""

    arrived = 0
    expected = 0
    ended_early = 0  # rollouts that ended (an error) before reaching the barrier: they never arrive
    on_all_alive = None
    released: asyncio.Event | None = None

    @classmethod
    def check(cls) -> None:
        """Release the barrier once every rollout has arrived or ended without arriving."""
        assert cls.released is not None
        if cls.released.is_set() or cls.arrived + cls.ended_early < cls.expected:
            return
        MEASURING[0] += 1  # the lag probe leaves out this pause: it is the benchmark's, not rollgym's
        gc.collect()
        if cls.on_all_alive is not None:
            cls.on_all_alive()
        MEASURING[0] += 1
        cls.released.set()

    async def astep(self, action):
        cls = type(self)
        if not getattr(self, "_passed", False):
            self._passed = True
            cls.arrived += 1
            cls.check()
            assert cls.released is not None
            await cls.released.wait()
        return await super().astep(action)


MEASURING = [0]  # bumped before and after the benchmark's own full collection and snapshot


async def lag_probe(stop: asyncio.Event, out: list[float]) -> None:
    """How late a 10 ms timer fires, sample by sample (a sample spanning the benchmark's own measurement is left out)."""
    while not stop.is_set():
        t, mark = time.perf_counter(), MEASURING[0]
        await asyncio.sleep(0.01)
        if MEASURING[0] == mark:
            out.append(time.perf_counter() - t - 0.01)


async def one_run(url: str, tok, n: int, turns: int, pool: int, on_all_alive=None) -> dict:
    Watched.arrived, Watched.ended_early, Watched.expected, Watched.on_all_alive = 0, 0, n, on_all_alive
    Watched.released = asyncio.Event()
    engine = VLLMServerEngine(url, max_concurrency=pool, max_retries=0, timeout_s=3600)
    seen = {"turns": 0, "errors": 0, "first": ""}

    def on_result(r) -> None:
        seen["turns"] += len(r.turns)
        if r.error is not None:
            seen["errors"] += 1
            seen["first"] = seen["first"] or f"{r.error.type}: {r.error.message}"[:300]
        assert Watched.released is not None
        if not Watched.released.is_set():  # it ended before the barrier opened, so it never arrived there
            Watched.ended_early += 1
            Watched.check()

    lags: list[float] = []
    stop = asyncio.Event()
    probe = asyncio.create_task(lag_probe(stop, lags))
    t0 = time.perf_counter()
    await run_rollouts(
        Watched,
        CalculatorEnv.default_tasks(n),
        Policy(engine=engine, tokenizer=tok),
        concurrency=n,
        keep=False,
        on_result=on_result,
        limits=Limits(max_turns=turns, max_tokens_per_turn=64, timeout_s=None),
        sampling=SamplingParams(seed=0),
    )
    wall = time.perf_counter() - t0
    stop.set()
    await probe
    await engine.aclose()
    lags.sort()
    return {
        "rollouts": n,
        "turns": seen["turns"],
        "errors": seen["errors"],
        "first_error": seen["first"],
        "wall_s": wall,
        "lag_p50_ms": 1e3 * statistics.median(lags),
        "lag_p99_ms": 1e3 * lags[int(0.99 * (len(lags) - 1))],
        "lag_max_ms": 1e3 * lags[-1],
    }


def message_bytes(messages: list[dict]) -> int:
    """What a rollout's messages hold: the dicts, their keys' slots and their string values."""
    total = 0
    for m in messages:
        total += sys.getsizeof(m) + sum(sys.getsizeof(v) for v in m.values() if isinstance(v, str))
    return total + sys.getsizeof(messages)


async def main(args) -> None:
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    tok.certify()
    work = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    ids = work / "ids.json"
    write_instant_ids(ids)
    print(
        f"bench_concurrency: {os.cpu_count()} cores, fd limit {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    with InstantServer(ids) as url:
        if args.rollouts:  # 0: only the trace and pool runs
            await one_run(url, tok, 256, args.turns, args.pool)  # warm-up: imports, recipes, the pool
            gc.collect()
            base = rss_kib()
            at_peak: dict = {}
            run = await one_run(
                url,
                tok,
                args.rollouts,
                args.turns,
                args.pool,
                on_all_alive=lambda: at_peak.setdefault("rss", rss_kib()),
            )
            per_rollout = (at_peak.get("rss", rss_kib()) - base) / args.rollouts
            print(f"\n## {args.rollouts:,} concurrent rollouts x {args.turns} turns, engine pool {args.pool}")
            print(json.dumps(run))
            print(
                f"RSS with all {args.rollouts:,} alive: +{per_rollout:.1f} KiB per rollout "
                f"(peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)"
            )
        if args.trace:
            await traced(url, tok, args)
        if args.pools:
            await pools(tok, args, ids)


async def traced(url: str, tok, args) -> None:
    """The Python heap per idle rollout, and who holds it, when `--trace` rollouts are all alive."""
    snaps: dict = {}
    held: dict = {}

    def snapshot() -> None:
        snaps["peak"] = tracemalloc.take_snapshot()
        held["messages"] = 0

    gc.collect()
    tracemalloc.start(4)
    before = tracemalloc.take_snapshot()
    await one_run(url, tok, args.trace, args.turns, args.pool, on_all_alive=snapshot)
    tracemalloc.stop()
    stats = snaps["peak"].compare_to(before, "lineno")
    total = sum(s.size_diff for s in stats)
    env = CalculatorEnv()
    messages, _ = await env.areset(options={"task": CalculatorEnv.default_tasks(1)[0]})
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
        ],
    }
    held = message_bytes([*messages, turn])
    print(
        f"\n## tracemalloc, {args.trace:,} rollouts all alive: Python heap +{total / args.trace / 1024:.1f} KiB per "
        f"rollout, of which its messages hold about {held / 1024:.1f} KiB"
    )
    print("| where | KiB per rollout |")
    print("| --- | ---: |")
    for s in stats[:12]:
        frame = s.traceback[0]
        where = f"{frame.filename.split('site-packages/')[-1]}:{frame.lineno}"
        print(f"| {where} | {s.size_diff / args.trace / 1024:.2f} |")


async def pools(tok, args, ids: Path) -> None:
    """Requests in flight at once through one engine: where the connection pool breaks, and why."""
    hold = args.pool_hold
    print(
        f"\n## the engine's connection pool: requests in flight at once (each answer held {hold:g} s by the server, "
        "longer than admitting them all takes)"
    )
    print("| pool | rollouts | wall s | errors | first error |")
    print("| ---: | ---: | ---: | ---: | --- |")
    with InstantServer(ids, delay_s=hold) as url:
        for pool in [int(x) for x in args.pools.split(",")]:
            run = await one_run(url, tok, pool, 1, pool)
            print(
                f"| {pool:,} | {pool:,} | {run['wall_s']:.1f} | {run['errors']} | {run['first_error'][:140]} |",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=65_000, help="0: skip the main run")
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--pool", type=int, default=64, help="the engine's max_concurrency (connections)")
    parser.add_argument("--trace", type=int, default=8_192, help="rollouts in the tracemalloc run (0: skip)")
    parser.add_argument("--pools", default="1024,24000", help="pool sizes to probe (empty: skip)")
    parser.add_argument("--pool-hold", type=float, default=120.0, help="seconds the server holds each answer")
    asyncio.run(main(parser.parse_args()))
