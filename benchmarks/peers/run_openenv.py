"""The workload through OpenEnv 0.10: the Calculator served by its own environment server (`openenv_calculator.py`,
a process this runner starts), one `EnvClient` WebSocket session per episode, and the model called with the
official `openai` client's chat completions with `tools` (the loop OpenEnv's examples write around a client:
reset, ask the model, step with its tool calls, until done or the turn budget). CPU counts the server's too.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _measure import Clock, Counts, arguments, load_workload, proc_cpu_s, proc_kib, proc_reset_peak, report
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import State
from openenv_calculator import CalculatorAction, CalculatorObservation

HERE = Path(__file__).resolve().parent


class CalculatorClient(EnvClient[CalculatorAction, CalculatorObservation, State]):
    def _step_payload(self, action: CalculatorAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CalculatorObservation]:
        obs = CalculatorObservation(**payload.get("observation", {}))
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(sessions: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "openenv_calculator.py"), str(port), str(sessions)], cwd=HERE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the OpenEnv server did not start")


async def episode(work: dict, llm: AsyncOpenAI, env_url: str, model: str, task: dict, counts: Counts) -> None:
    s = work["sampling"]
    async with CalculatorClient(base_url=env_url) as env:
        result = await env.reset(task=task)
        messages = [{"role": "system", "content": work["system"]}, *result.observation.messages]
        for _turn in range(work["max_turns"]):
            response = await llm.chat.completions.create(
                model=model,
                messages=messages,
                tools=work["tools"],
                temperature=s["temperature"],
                top_p=s["top_p"],
                seed=s["seed"],
                max_tokens=s["max_tokens"],
            )
            counts.turns += 1
            counts.sampled += response.usage.completion_tokens if response.usage else 0
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                messages.append({"role": "user", "content": work["nudge"]})
                continue
            calls = []
            for c in message.tool_calls:
                try:
                    arguments = json.loads(c.function.arguments)
                except ValueError:
                    arguments = {}
                calls.append({"id": c.id, "name": c.function.name, "arguments": arguments})
            result = await env.step(CalculatorAction(tool_calls=calls))
            messages += result.observation.messages
            if result.done:
                break


async def batch(work, llm, env_url, model, tasks, concurrency, counts) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(task: dict) -> None:
        async with gate:
            try:
                await episode(work, llm, env_url, model, task, counts)
            except Exception as exc:  # noqa: BLE001 - one failed episode is counted, the batch goes on
                counts.failed(exc)
            counts.episodes.append(task["task_id"])

    await asyncio.gather(*(one(t) for t in tasks))


async def main() -> None:
    args = arguments()
    work = load_workload(args.workload)
    server, env_url = start_server(args.concurrency + args.warmup + 8)
    try:
        import httpx

        limits = httpx.Limits(max_connections=max(args.concurrency, 100), max_keepalive_connections=args.concurrency)
        llm = AsyncOpenAI(
            base_url=args.base_url,
            api_key="none",
            max_retries=0,
            timeout=600,
            http_client=DefaultAsyncHttpxClient(limits=limits),
        )
        tasks = work["tasks"]
        await batch(work, llm, env_url, args.model, tasks[: args.warmup], min(args.concurrency, args.warmup), Counts())
        counts = Counts()
        proc_reset_peak(server.pid)
        server_cpu0 = proc_cpu_s(server.pid)
        with Clock() as clock:
            await batch(work, llm, env_url, args.model, tasks[: args.episodes], args.concurrency, counts)
        server_cpu = proc_cpu_s(server.pid) - server_cpu0
        server_peak = proc_kib(server.pid)
        await llm.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    report(
        "openenv",
        version("openenv"),
        counts,
        clock.wall,
        clock.cpu + server_cpu,
        clock.base_kib,
        clock.peak_kib,
        args.concurrency,
        {"helper_cpu_s": server_cpu, "helper_peak_kib": server_peak},
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
