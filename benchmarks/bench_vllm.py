"""rollgym over the real vLLM vs raw vLLM (printed, never asserted): `python benchmarks/bench_vllm.py [--url URL]`.

Without --url it starts its own server with `.ci/vllm-up` (float32, eager, processed logprobs, dev mode for
`/reset_prefix_cache`). For each concurrency (1, 8, 32) and episode shape (Calculator, 1 turn; and 4 turns, where a
text reply gets a nudge to use the tools instead of ending the episode and a turn also ends at a newline or a
period, so most episodes run their 4 turns; the mean is printed):
1. rollgym: `run_rollouts` with VLLMServerEngine; every request it sends (prompt ids, sampling) is recorded;
2. raw: the same requests, same bodies, posted with aiohttp at the same concurrency (an episode's turns in order);
the prefix cache is reset before each, so both start cold; one warm-up episode of each runs first, uncounted. Each
cell runs rollgym, raw, raw, rollgym (ABBA, so a drift in the machine's speed cancels) and sums tokens and time. Printed: sampled tokens/s of each, rollgym's as a ratio
of raw's (target >= 0.95; this VM drifts up to 2x, which is why both run side by side), and the server's own
prefix-cache hit rate (Δhits/Δqueries from /metrics) during the rollgym run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]


def nudging_calculator():
    """Calculator whose text replies are answered with a nudge, so an episode lasts its whole turn budget."""
    from rollgym.envs.builtin.calculator import CalculatorEnv

    class NudgingCalculator(CalculatorEnv):
        async def on_text_reply(self, message: dict):
            return [{"role": "user", "content": "Use the tools: call add, subtract or multiply, then submit."}], False

    return NudgingCalculator


class RecordingEngine:
    """VLLMServerEngine plus the list of (prompt, sampling) it was asked for."""

    def __init__(self, inner, log: list) -> None:
        self.inner, self.log = inner, log
        self.name, self.model, self.token_exact = inner.name, inner.model, inner.token_exact

    @property
    def max_model_len(self):
        return self.inner.max_model_len

    async def generate(self, prompt_ids, sampling=None):
        gen = await self.inner.generate(prompt_ids, sampling)
        self.log.append((list(prompt_ids), sampling))
        return gen

    async def aclose(self) -> None:
        await self.inner.aclose()


async def prefix_counters(session, root: str) -> tuple[float, float]:
    async with session.get(f"{root}/metrics") as resp:
        text = await resp.text()
    values = {"queries": 0.0, "hits": 0.0}
    for line in text.splitlines():
        for key in values:
            if line.startswith(f"vllm:prefix_cache_{key}_total{{"):
                values[key] += float(line.rsplit(" ", 1)[1])
    return values["queries"], values["hits"]


async def run_rollgym(
    url: str,
    tokenizer,
    tasks: list[dict],
    concurrency: int,
    turns: int,
    max_tokens: int,
    stop_token_ids: list[int] = (),
):
    from rollgym import Limits, Policy, SamplingParams, run_rollouts
    from rollgym.engines.vllm_server import VLLMServerEngine

    log: list = []
    engine = RecordingEngine(VLLMServerEngine(url, max_concurrency=concurrency), log)
    policy = Policy(engine=engine, tokenizer=tokenizer)
    started = time.perf_counter()
    env = "rollgym/Calculator-v0" if turns == 1 else nudging_calculator()
    rollouts = await run_rollouts(
        env,
        tasks,
        policy,
        n=1,
        concurrency=concurrency,
        limits=Limits(max_turns=turns, max_tokens_per_turn=max_tokens),
        sampling=SamplingParams(temperature=1.0, seed=0, stop_token_ids=list(stop_token_ids)),
    )
    took = time.perf_counter() - started
    await engine.aclose()
    sampled = sum(len(t.completion_ids) for r in rollouts for t in r.turns)
    by_prompt = {}  # each rollout's requests, in turn order (its prompt grows by completion + bridge each turn)
    for r in rollouts:
        ids = list(r.prompt_ids)
        chain = []
        for t in r.turns:
            chain.append(list(ids))
            ids += t.completion_ids + t.bridge_ids
        by_prompt[r.task_id] = chain
    sampling_of = {tuple(p): s for p, s in log}
    episodes = [[(p, sampling_of[tuple(p)]) for p in chain] for chain in by_prompt.values()]
    errors = sum(r.error is not None for r in rollouts)
    return took, sampled, episodes, sum(len(r.turns) for r in rollouts) / len(rollouts), errors


async def run_raw(url: str, episodes: list, concurrency: int, model: str, max_model_len: int) -> tuple[float, int]:
    import aiohttp

    from rollgym.engines.vllm_server import VLLMServerEngine

    shaper = VLLMServerEngine(url, model, max_model_len=max_model_len, discover=False)
    gate = asyncio.Semaphore(concurrency)
    sampled = 0

    async def episode(session, requests):
        nonlocal sampled
        async with gate:
            for prompt, sampling in requests:
                async with session.post(f"{url}/completions", json=shaper.request_body(prompt, sampling)) as resp:
                    body = await resp.json()
                sampled += len(body["choices"][0]["token_ids"])

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=1800)) as session:
        started = time.perf_counter()
        await asyncio.gather(*(episode(session, e) for e in episodes))
        took = time.perf_counter() - started
    await shaper.aclose()
    return took, sampled


async def bench(url: str, model: str, levels: list[int], episodes_per_level: int, max_tokens: int) -> None:
    import aiohttp

    from rollgym.envs.builtin.calculator import CalculatorEnv
    from rollgym.rollouts.policy import certified_tokenizer

    root = url.rsplit("/v1", 1)[0]
    tokenizer = certified_tokenizer(model)
    print(
        f"server {url} model {model}; max {max_tokens} tokens per turn, temperature 1.0; prefix cache reset before each run"
    )
    print(
        f"  {'episode':<8} {'conc':>4} {'eps':>4} {'turns':>5} {'rollgym tok/s':>14} {'raw tok/s':>10} {'ratio':>6} "
        f"{'cache hit (rollgym run)':>24}"
    )
    async with aiohttp.ClientSession() as http:

        async def reset() -> None:
            async with http.post(f"{root}/reset_prefix_cache") as resp:
                if resp.status != 200:
                    sys.exit(
                        f"/reset_prefix_cache answered {resp.status}: start the server with VLLM_SERVER_DEV_MODE=1, "
                        "or let this script start its own"
                    )

        warm = CalculatorEnv.default_tasks(1, seed=99)
        _, _, warm_episodes, _, _ = await run_rollgym(url, tokenizer, warm, 1, 1, 8)
        await run_raw(url, warm_episodes, 1, model, 2048)
        for turns in (1, 4):
            for concurrency in levels:
                tasks = CalculatorEnv.default_tasks(max(episodes_per_level, concurrency))
                stops = [] if turns == 1 else [tokenizer.encode("\n")[-1], tokenizer.encode(".")[-1]]
                budget = max_tokens if turns == 1 else max_tokens + 16
                took = sampled = raw_took = raw_sampled = 0.0
                hits = queries = 0.0
                turns_seen: list[float] = []
                errors = 0
                episodes: list = []
                for side in ("rollgym", "raw", "raw", "rollgym"):  # raw replays what the first rollgym run sent
                    await reset()
                    if side == "rollgym":
                        q0, h0 = await prefix_counters(http, root)
                        t, n, sent, mean_turns, errs = await run_rollgym(
                            url, tokenizer, tasks, concurrency, turns, budget, stops
                        )
                        q1, h1 = await prefix_counters(http, root)
                        episodes = episodes or sent
                        took, sampled, queries, hits = took + t, sampled + n, queries + q1 - q0, hits + h1 - h0
                        turns_seen.append(mean_turns)
                        errors += errs
                    else:
                        t, n = await run_raw(url, episodes, concurrency, model, 2048)
                        raw_took, raw_sampled = raw_took + t, raw_sampled + n
                mean_turns = sum(turns_seen) / len(turns_seen)
                hit = hits / queries if queries else 0.0
                mine, theirs = sampled / took, raw_sampled / raw_took
                note = f"  ({errors} errors)" if errors else ""
                print(
                    f"  {str(turns) + '-turn':<8} {concurrency:>4} {len(tasks):>4} {mean_turns:>5.2f} {mine:>14.1f} {theirs:>10.1f} "
                    f"{mine / theirs:>6.3f} {hit:>23.1%}{note}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (http://127.0.0.1:PORT); default: start one with .ci/vllm-up")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--episodes", type=int, default=8, help="episodes per level (at least the concurrency)")
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()
    from rollgym.engines.default_model import smollm2_dir

    model = str(smollm2_dir())
    run_dir = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    env = {**os.environ, "VLLM_RUN_DIR": str(run_dir), "VLLM_SERVER_DEV_MODE": "1"}
    url = args.url
    if url is None:
        done = subprocess.run(
            ["bash", str(REPO / ".ci" / "vllm-up"), "start", model], capture_output=True, text=True, env=env
        )
        if done.returncode != 0:
            sys.exit(f"could not start vLLM:\n{done.stderr[-2000:]}")
        url = done.stdout.strip().splitlines()[-1]
    try:
        asyncio.run(
            bench(
                url.rstrip("/") + "/v1", model, [int(x) for x in args.levels.split(",")], args.episodes, args.max_tokens
            )
        )
    finally:
        if args.url is None:
            subprocess.run(["bash", str(REPO / ".ci" / "vllm-up"), "stop"], env=env, capture_output=True)


if __name__ == "__main__":
    main()
