"""Recording-proxy overhead (printed, never asserted): run `python benchmarks/bench_proxy.py`.

64 concurrent sessions, each an 8-turn chat (the full history resent every turn, as agents do), against a
proxy over an instant engine (`ScriptedEngine`, in its own process, loopback HTTP). Reported per request:
(a) calling the engine directly (same prompts, same concurrency); (b) the proxy's own work (server-side
time minus engine time: parse, match, bridge, parse the completion, record; the `x-rollgym-overhead-ms`
header); (c) end-to-end latency through the proxy, and through a trivial FastAPI server returning a fixed
completion for the same bodies (the HTTP stack's share). Target: (b) < 2 ms p50.
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

from fastapi import FastAPI, Request

from rollgym.rollouts.policy import Policy

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _tokenizer():
    from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
    from rollgym.tokenization.templates import CHATML_TOOLS

    return load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)


def _engine(tok):
    from rollgym.engines.scripted import ScriptedEngine

    reply = tok.encode("Sure, here is a short answer to that question.") + [tok.end_of_turn_id]
    return ScriptedEngine(lambda prompt, sampling: reply)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _row(name: str, xs: list[float]) -> None:
    print(f"  {name:<58} p50 {statistics.median(xs):8.3f} ms   p99 {_pct(xs, 0.99):8.3f} ms   (n={len(xs)})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_proxy(port: int) -> None:
    from rollgym.proxy import RecordingProxy

    tok = _tokenizer()
    proxy = RecordingProxy(Policy(engine=_engine(tok), tokenizer=tok), port=port, handle_signals=True)
    asyncio.run(proxy.serve_forever())


def serve_baseline(port: int) -> None:
    """A trivial FastAPI server: reads the JSON body and returns a fixed chat completion."""
    import uvicorn
    from fastapi.responses import JSONResponse

    app = FastAPI()
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Sure, here is a short answer to that question."},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }

    @app.post("/sessions/{sid}/v1/chat/completions")
    async def chat(sid: str, request: Request):
        await request.json()
        return JSONResponse(body)

    @app.post("/sessions")
    async def create(request: Request):
        return JSONResponse({"session_id": "s"}, status_code=201)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(mode: str) -> tuple[subprocess.Popen, str]:
    import httpx

    port = _free_port()
    proc = subprocess.Popen([sys.executable, __file__, mode, "--port", str(port)])
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.post(f"{url}/sessions", json={}, timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{mode} server did not start")


async def drive(url: str, sessions: int, turns: int) -> tuple[list[float], list[float]]:
    """Run `sessions` concurrent chats of `turns` turns; per-request latency and proxy-reported overhead (ms)."""
    import httpx

    latency, overhead = [], []
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(i: int) -> None:
            sid = (await client.post(f"{url}/sessions", json={})).json()["session_id"]
            msgs = [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"Question {i}: what is the capital of France?"},
            ]
            for t in range(turns):
                t0 = time.perf_counter()
                resp = await client.post(
                    f"{url}/sessions/{sid}/v1/chat/completions", json={"model": "m", "messages": msgs}
                )
                latency.append((time.perf_counter() - t0) * 1000)
                resp.raise_for_status()
                if "x-rollgym-overhead-ms" in resp.headers:
                    overhead.append(float(resp.headers["x-rollgym-overhead-ms"]))
                msgs += [resp.json()["choices"][0]["message"], {"role": "user", "content": f"Follow-up {t}, please."}]

        await asyncio.gather(*(one(i) for i in range(sessions)))
    return latency, overhead


async def direct(sessions: int, turns: int) -> list[float]:
    """The same prompts' sizes straight into the engine, same concurrency."""
    from rollgym.engines import SamplingParams

    tok = _tokenizer()
    engine = _engine(tok)
    sampling = SamplingParams(stop_token_ids=tok.stop_token_ids, max_tokens=1024)
    latency: list[float] = []

    async def one(i: int) -> None:
        prompt = tok.start([{"role": "user", "content": f"Question {i}: what is the capital of France?"}]).prompt_ids
        for _ in range(turns):
            t0 = time.perf_counter()
            gen = await engine.generate(prompt, sampling)
            latency.append((time.perf_counter() - t0) * 1000)
            prompt = (
                prompt
                + gen.completion_ids
                + tok.encode("<|im_start|>user\nFollow-up<|im_end|>\n<|im_start|>assistant\n")
            )

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return latency


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve-proxy", "serve-baseline"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=8)
    args = parser.parse_args()
    if args.mode == "serve-proxy":
        return serve_proxy(args.port)
    if args.mode == "serve-baseline":
        return serve_baseline(args.port)
    print(f"recording proxy, {args.sessions} concurrent sessions x {args.turns} turns, instant engine (ScriptedEngine)")
    _row("(a) engine called directly", asyncio.run(direct(args.sessions, args.turns)))
    for mode in ("serve-proxy", "serve-baseline"):
        proc, url = _start(mode)
        try:
            asyncio.run(drive(url, 8, 2))  # warm-up
            cpu0 = _cpu_s(proc.pid)
            latency, overhead = asyncio.run(drive(url, args.sessions, args.turns))
            cpu_ms = (_cpu_s(proc.pid) - cpu0) * 1000 / len(latency)
        finally:
            proc.terminate()
            proc.wait(10)
        if mode == "serve-proxy":
            _row("(b) proxy's own work per request (server-side, engine excluded)", overhead)
            _row("(c) end-to-end through the proxy (HTTP, queueing included)", latency)
            print(f"  {'(d) proxy server CPU per request (HTTP stack included)':<58} {cpu_ms:8.3f} ms")
        else:
            _row("(c') end-to-end through a trivial FastAPI server (HTTP baseline)", latency)
            label = "(d') trivial FastAPI server CPU per request"
            print(f"  {label:<58} {cpu_ms:8.3f} ms")


if __name__ == "__main__":
    main()
