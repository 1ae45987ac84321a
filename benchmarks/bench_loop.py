"""Rollout-loop overhead: an instant engine and an instant environment, so every second is rollgym's.

The scripted policy calls `add(a=<a counter>, b=2)` every turn, so every tool result differs and no
cache of rendered or tokenized text can answer for the loop. Each configuration runs several times
(median and best are reported) beside a fixed pure-Python reference loop timed just before it: this
VM's speed drifts by up to 1.7x within a minute, and the reference shows which state a figure came from.

Configurations: one process vs Ray actors (`run_rollouts(workers=N)`: N actors on a local Ray instance),
and rollouts kept in memory (`run_rollouts` returns them all) vs streamed (`keep=False`, as
`rollgym generate` writes them to disk). Also: the largest concurrency that stays healthy on this
machine, and, for one real-model rollout, the share of its wall time spent in rollgym.
Targets (issue 5): >= 5,000 turns/s; >= 2,000 concurrent rollouts; rollgym's share small.
Run: `.venv/bin/python benchmarks/bench_loop.py [--quick]`.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.ray import RayConfig
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

TURNS = 8


class CountingAdd:
    """Scripted policy: `add(a=n, b=2)` with n = 1, 2, 3, ... (digits as single-character tokens: any
    token sequence that decodes to the call is a valid sample). Picklable, for worker processes."""

    def __init__(self, tok):
        self.head = tok.encode('<tool_call>\n{"name": "add", "arguments": {"a": ')
        self.tail = tok.encode(', "b": 2}}\n</tool_call>') + [tok.end_of_turn_id]
        self.digit = {d: tok.encode(d) for d in "0123456789"}
        assert all(len(ids) == 1 for ids in self.digit.values())
        self.n = 0

    def __call__(self, prompt, sampling):
        self.n += 1
        return self.head + [self.digit[d][0] for d in str(self.n)] + self.tail


def reference_ms() -> float:
    """A fixed pure-Python workload (best of 3): the machine's speed right now (lower is faster)."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        x = 0
        for i in range(1_000_000):
            x += i
        best = min(best, time.perf_counter() - t)
    return best * 1e3


async def lag_probe(stop: asyncio.Event, out: list) -> None:
    """How late a 10 ms sleep wakes up: the event loop's responsiveness under load."""
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.01)
        out.append(time.perf_counter() - t - 0.01)


async def measure(tok, rollouts: int, concurrency: int, workers: int = 1, keep: bool = True) -> dict:
    tasks = CalculatorEnv.default_tasks(rollouts)
    engine = ScriptedEngine(CountingAdd(tok))
    seen = {"turns": 0, "errors": 0, "results": set()}

    def on_result(r) -> None:
        seen["turns"] += len(r.turns)
        seen["errors"] += r.error is not None
        if len(r.turns) > 1 and len(seen["results"]) < 8:
            seen["results"].add(r.turns[1].env_messages[0]["content"])

    ref = reference_ms()
    lags: list[float] = []
    stop = asyncio.Event()
    probe = asyncio.create_task(lag_probe(stop, lags))
    gc.collect()
    t0 = time.perf_counter()
    kept = await run_rollouts(
        "rollgym/Calculator-v0",
        tasks,
        Policy(engine=engine, tokenizer=tok),
        n=1,
        concurrency=concurrency,
        limits=Limits(max_turns=TURNS),
        keep=keep,
        on_result=on_result,
        ray=RayConfig(actors=workers, keep_actors=True) if workers > 1 else None,
    )
    wall = time.perf_counter() - t0
    stop.set()
    await probe
    assert len(seen["results"]) > 1  # tool results really vary
    assert len(kept) == (rollouts if keep else 0)
    del kept
    return {
        "rollouts": rollouts,
        "concurrency": concurrency,
        "workers": workers,
        "keep": keep,
        "turns": seen["turns"],
        "wall_s": wall,
        "turns_per_s": seen["turns"] / wall,
        "errors": seen["errors"],
        "max_lag_s": max(lags) if lags else 0.0,
        "reference_ms": ref,
    }


async def repeat(tok, times: int, **config) -> dict:
    runs = [await measure(tok, **config) for _ in range(times)]
    rates = [r["turns_per_s"] for r in runs]
    return {
        **runs[0],
        "median": statistics.median(rates),
        "best": max(rates),
        "runs": rates,
        "errors": sum(r["errors"] for r in runs),
        "max_lag_s": max(r["max_lag_s"] for r in runs),
        "reference_ms": [round(r["reference_ms"], 1) for r in runs],
    }


def show(row: dict) -> None:
    print(
        f"{row['rollouts']:>8} {row['concurrency']:>11} {row['workers']:>7} {'kept' if row['keep'] else 'streamed':>9} "
        f"{row['median']:>9,.0f} {row['best']:>8,.0f} {row['errors']:>6} {row['max_lag_s'] * 1e3:>8.0f}   "
        f"{row['reference_ms']}",
        flush=True,
    )


async def main(quick: bool) -> None:
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    tok.certify()
    cores = os.cpu_count() or 1
    await measure(tok, 64, 64)  # warm-up
    await measure(tok, 64, 64, workers=cores)  # starts the local Ray instance
    times = 1 if quick else 3
    scale = 1 if quick else 4
    print(
        f"{'rollouts':>8} {'concurrency':>11} {'workers':>7} {'results':>9} {'median/s':>9} {'best/s':>8} {'errors':>6} "
        f"{'lag ms':>8}   reference ms (lower = faster machine)"
    )
    throughput = [
        {"rollouts": 512 * scale, "concurrency": 256, "workers": 1, "keep": True},
        {"rollouts": 512 * scale, "concurrency": 256, "workers": 1, "keep": False},
        {"rollouts": 1024 * scale, "concurrency": 256, "workers": cores, "keep": True},
        {"rollouts": 1024 * scale, "concurrency": 256, "workers": cores, "keep": False},
    ]
    health = [
        {"rollouts": 2048, "concurrency": 2048, "workers": 1, "keep": False},
        {"rollouts": 4096, "concurrency": 4096, "workers": cores, "keep": False},
    ]
    rows = []
    for config in throughput + ([] if quick else health):
        row = await repeat(tok, times, **config)
        rows.append(row)
        show(row)
    by_mode = {(r["workers"], r["keep"]): r["median"] for r in rows[:4]}
    best = max(rows, key=lambda r: r["median"])
    print(
        f"\nturns/s, median of {times}: one process {by_mode[(1, True)]:,.0f} (kept) / {by_mode[(1, False)]:,.0f} (streamed); "
        f"{cores} workers {by_mode[(cores, True)]:,.0f} (kept) / {by_mode[(cores, False)]:,.0f} (streamed). "
        f"Best configuration ({best['workers']} workers, concurrency {best['concurrency']}): {best['median']:,.0f} median, "
        f"{best['best']:,.0f} best run; best single run overall {max(r['best'] for r in rows):,.0f} (target >= 5,000)"
    )
    # Healthy: no errors and throughput holds (median >= half the same mode's median at concurrency 256).
    healthy = [
        r["concurrency"] for r in rows[4:] if r["errors"] == 0 and r["median"] >= 0.5 * by_mode[(r["workers"], False)]
    ]
    if not quick:
        print(f"largest healthy concurrency measured: {max(healthy) if healthy else 0} (target >= 2,000)")
    print(json.dumps(rows))
    await share_of_wall_time(tok)


async def share_of_wall_time(tok) -> None:
    """One real rollout (SmolLM2-135M on CPU, Calculator): where its wall time went."""
    from rollgym.engines import SamplingParams
    from rollgym.engines.transformers_engine import TransformersEngine
    from rollgym.envs import make
    from rollgym.rollouts.loop import run_rollout

    engine = TransformersEngine("smollm2-135m")
    try:
        r = await run_rollout(
            make("rollgym/Calculator-v0"),
            Policy(engine=engine, tokenizer=tok),
            CalculatorEnv.default_tasks(1)[0],
            limits=Limits(max_turns=3, max_tokens_per_turn=48),
            sampling=SamplingParams(seed=0),
        )
    finally:
        await engine.aclose()
    t = r.timings
    ours = t.wall_s - t.generate_s - t.env_s - t.reset_s
    print(
        f"\nreal rollout: {len(r.turns)} turns, wall {t.wall_s:.2f}s = engine {t.generate_s:.2f}s + tools {t.env_s:.3f}s "
        f"+ reset {t.reset_s:.3f}s + rollgym {ours:.3f}s ({100 * ours / t.wall_s:.2f}% of wall time)"
    )


if __name__ == "__main__":  # required: worker processes re-import this module
    asyncio.run(main("--quick" in sys.argv))
