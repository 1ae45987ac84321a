"""Engine speed figures (printed, never asserted): run `python benchmarks/bench_engines.py`.

1. TransformersEngine on SmolLM2-135M: tokens/s for 16 concurrent requests (dynamically batched)
   vs the same 16 requests one at a time. Target: batched >= 4x.
2. VLLMServerEngine against the vLLM stand-in server (in its own process, over loopback):
   per-request client overhead at 64 concurrent requests, as (a) the engine's own work per request
   (body building, parsing, validation), (b) per request, the caller's latency minus the HTTP exchange
   (p50), and the extra wall time per request over raw aiohttp posts of the same body under the same
   load, (c) client CPU time per request (also for raw httpx, the transport first tried:
   encode/httpx#3215). The p50 latency difference is printed too, but it multiplies any per-request
   cost by the request's queue position, since one client process handles the 64 answers in turn.
   Target: < 1 ms p50.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _row(name: str, value: str, note: str = "") -> None:
    print(f"  {name:<52} {value:>14}  {note}")


async def bench_transformers(n_requests: int, max_tokens: int) -> None:
    import torch
    from transformers import AutoTokenizer

    from rollgym.engines import SamplingParams
    from rollgym.engines.default_model import smollm2_dir
    from rollgym.engines.transformers_engine import TransformersEngine

    engine = TransformersEngine("smollm2-135m", max_batch_size=n_requests)
    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    topics = [
        "the sea",
        "a city",
        "mountains",
        "a robot",
        "coffee",
        "winter",
        "a library",
        "the moon",
        "trains",
        "a garden",
        "music",
        "rain",
        "a market",
        "the desert",
        "birds",
        "a bridge",
    ]
    prompts = [tok(f"Write one sentence about {topics[i % len(topics)]}:")["input_ids"] for i in range(n_requests)]
    # the same seeded requests both ways; ignore EOS by max_tokens-only stopping is not offered, so count real tokens
    sampling = [SamplingParams(temperature=1.0, max_tokens=max_tokens, seed=i) for i in range(n_requests)]
    await engine.generate(prompts[0], SamplingParams(max_tokens=2))  # warm-up

    t0 = time.perf_counter()
    alone = [await engine.generate(p, s) for p, s in zip(prompts, sampling, strict=True)]
    t_alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    together = await asyncio.gather(*(engine.generate(p, s) for p, s in zip(prompts, sampling, strict=True)))
    t_batch = time.perf_counter() - t0
    n_alone = sum(len(g.completion_ids) for g in alone)
    n_batch = sum(len(g.completion_ids) for g in together)
    same = sum(a.completion_ids == b.completion_ids for a, b in zip(alone, together, strict=True))
    print(
        f"TransformersEngine, SmolLM2-135M fp32, CPU threads={torch.get_num_threads()}, "
        f"{n_requests} requests x max_tokens={max_tokens}"
    )
    _row("one at a time: tokens/s", f"{n_alone / t_alone:.1f}", f"({n_alone} tokens in {t_alone:.1f} s)")
    _row(
        f"{n_requests} concurrent, batched: tokens/s",
        f"{n_batch / t_batch:.1f}",
        f"({n_batch} tokens in {t_batch:.1f} s)",
    )
    _row("speed-up (target >= 4x)", f"{(n_batch / t_batch) / (n_alone / t_alone):.1f}x")
    _row("seeded requests with identical tokens both ways", f"{same}/{n_requests}")
    await engine.aclose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _wait_ready(url: str) -> None:
    import httpx

    async with httpx.AsyncClient() as client:
        for _ in range(200):
            try:
                if (await client.get(url + "/v1/models")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("the stand-in server did not start")


async def bench_vllm_server(concurrency: int, rounds: int) -> None:
    import httpx

    from rollgym.engines import GenerationTimings, SamplingParams
    from rollgym.engines.vllm_server import VLLMServerEngine

    port = _free_port()
    server = subprocess.Popen(  # the stand-in lives with the tests (tests/standins), not in the package
        [sys.executable, "-m", "standins.vllm_standin", "--port", str(port), "--model", "bench/model"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[1] / "tests",
    )
    try:
        base = f"http://127.0.0.1:{port}"
        await _wait_ready(base)
        prompt = list(range(100, 612))  # a 512-token prompt
        sampling = SamplingParams(temperature=1.0, max_tokens=64, seed=1)
        engine = VLLMServerEngine(base + "/v1", "bench/model", max_concurrency=concurrency, max_model_len=4096)

        # (a) the engine's own work per request, on a real response body
        body = engine.request_body(prompt, sampling)
        async with httpx.AsyncClient() as client:
            raw = (await client.post(base + "/v1/completions", json=body)).json()
        own = []
        for _ in range(2000):
            t0 = time.perf_counter()
            engine.request_body(prompt, sampling)
            engine.parse_response(raw, prompt, sampling, GenerationTimings())
            own.append(time.perf_counter() - t0)

        outside_transport: list[float] = []

        async def through_engine() -> float:
            t0 = time.perf_counter()
            gen = await engine.generate(prompt, sampling)
            latency = time.perf_counter() - t0
            # everything the caller waited for beyond the HTTP exchange itself (timings.generate_s)
            outside_transport.append(latency - gen.timings.generate_s)
            return latency

        import aiohttp

        raw_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
        httpx_client = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        )

        async def raw_post() -> float:
            t0 = time.perf_counter()
            async with raw_session.post(base + "/v1/completions", json=body) as response:
                await response.json()
            return time.perf_counter() - t0

        async def httpx_post() -> float:
            t0 = time.perf_counter()
            response = await httpx_client.post(base + "/v1/completions", json=body)
            response.json()
            return time.perf_counter() - t0

        stats = {name: {"lat": [], "cpu": 0.0, "wall": 0.0} for name in ("raw", "engine", "httpx")}
        fns = {"raw": raw_post, "engine": through_engine, "httpx": httpx_post}

        async def one_round(name: str) -> None:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            stats[name]["lat"] += await asyncio.gather(*(fns[name]() for _ in range(concurrency)))
            stats[name]["cpu"] += time.process_time() - cpu0
            stats[name]["wall"] += time.perf_counter() - wall0

        for name in fns:  # warm the pools
            await one_round(name)
        for s in stats.values():
            s.update(lat=[], cpu=0.0, wall=0.0)
        outside_transport.clear()
        for _ in range(rounds):  # interleaved, so drifting machine load hits every client alike
            for name in fns:
                await one_round(name)
        per = rounds * concurrency
        raw_lat, raw_cpu, raw_wall = stats["raw"]["lat"], stats["raw"]["cpu"] / per, stats["raw"]["wall"] / per
        eng_lat, eng_cpu, eng_wall = stats["engine"]["lat"], stats["engine"]["cpu"] / per, stats["engine"]["wall"] / per
        httpx_cpu = stats["httpx"]["cpu"] / per
        await raw_session.close()
        await httpx_client.aclose()
        await engine.aclose()

        def ms(x: float) -> str:
            return f"{x * 1000:.3f} ms"

        n = rounds * concurrency
        print(
            f"VLLMServerEngine vs the vLLM stand-in (own process, loopback), {concurrency} concurrent, {n} requests, "
            f"512-token prompts, 64-token completions"
        )
        _row("(a) engine's own work per request, p50", ms(statistics.median(own)), "build body + parse + validate")
        _row("    raw aiohttp latency p50", ms(statistics.median(raw_lat)))
        _row("    engine latency p50", ms(statistics.median(eng_lat)))
        _row(
            "(b) per-request overhead p50 (target < 1 ms)",
            ms(statistics.median(outside_transport)),
            "caller latency minus the HTTP exchange",
        )
        _row("    per-request overhead p90", ms(statistics.quantiles(outside_transport, n=10)[-1]))
        _row(
            "    wall time per request: raw aiohttp / engine",
            f"{ms(raw_wall)} / {ms(eng_wall)}",
            f"overhead {ms(eng_wall - raw_wall)}",
        )
        _row(
            "    p50 latency difference engine - raw",
            ms(statistics.median(eng_lat) - statistics.median(raw_lat)),
            "(x queue position: the client handles 64 answers in turn)",
        )
        _row("(c) client CPU per request: raw aiohttp", ms(raw_cpu))
        _row("    client CPU per request: engine", ms(eng_cpu), f"overhead {ms(eng_cpu - raw_cpu)}")
        _row("    client CPU per request: raw httpx (not used)", ms(httpx_cpu))
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--only", choices=["transformers", "vllm-server"], default=None)
    args = parser.parse_args()
    if args.only in (None, "transformers"):
        asyncio.run(bench_transformers(args.requests, args.max_tokens))
    if args.only in (None, "vllm-server"):
        asyncio.run(bench_vllm_server(args.concurrency, args.rounds))


if __name__ == "__main__":
    main()
