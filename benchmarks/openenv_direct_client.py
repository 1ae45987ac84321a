"""The OpenEnv side of bench_suite_openenv.py, run in openenv's own venv: the guessing game played by bisection with
OpenEnv's own async client (`GenericEnvClient`), `episodes` episodes `concurrency` at a time; prints one JSON line
{"turns", "wall_s", "cpu_s"} (this process's CPU)."""

import asyncio
import json
import sys
import time

from openenv.core.generic_client import GenericEnvClient


async def episode(url: str, seed: int) -> int:
    turns, low, high = 0, 1, 100
    async with GenericEnvClient(base_url=url) as client:
        await client.reset(seed=seed)
        while True:
            guess = (low + high) // 2
            result = await client.step({"guess": guess})
            turns += 1
            feedback = result.observation["feedback"]
            if result.done:
                return turns
            low, high = (guess + 1, high) if feedback == "higher" else (low, guess - 1)


async def main(url: str, episodes: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(seed: int) -> int:
        async with gate:
            return await episode(url, seed)

    wall, cpu = time.perf_counter(), time.process_time()
    turns = sum(await asyncio.gather(*(one(seed) for seed in range(episodes))))
    print(json.dumps({"turns": turns, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}))


asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
