"""32 concurrent sandboxes, each running 20 commands: throughput and failures (target: 0 failures).
Usage: python benchmarks/concurrent_sandboxes.py [SANDBOXES] [COMMANDS]"""

from __future__ import annotations

import asyncio
import sys
import time

from _common import setup, summary

from rollgym.envs.sandbox import RUN_ID, SandboxConfig, SandboxPool, list_containers


async def worker(
    pool: SandboxPool,
    cfg: SandboxConfig,
    i: int,
    commands: int,
    latencies: list[float],
    ready: asyncio.Barrier,
    phase: dict,
) -> int:
    failures = 0
    async with pool.sandbox(cfg.model_copy(update={"task_id": f"bench-{i}"})) as sb:
        await ready.wait()  # all sandboxes are up: time the command phase on its own
        phase.setdefault("start", time.perf_counter())
        for j in range(commands):
            start = time.perf_counter()
            res = await sb.aexec(f"{COMMAND} {1000 + j}", timeout=60)
            latencies.append(time.perf_counter() - start)
            failures += res.exit_code != 0 or res.output.strip() != str(sum(range(1000 + j)))
        phase["end"] = time.perf_counter()
    return failures


COMMAND = "python3 -c 'import sys; print(sum(range(int(sys.argv[1]))))'"


async def main(n: int = 32, commands: int = 20) -> None:
    image = setup()
    cfg = SandboxConfig(image=image, mem_limit="256m", cpus=0.5)
    pool = SandboxPool(warm=0, max_daemon_calls=8, creates_per_s=50)
    latencies: list[float] = []
    start = time.perf_counter()
    ready, phase = asyncio.Barrier(n), {}
    results = await asyncio.gather(
        *(worker(pool, cfg, i, commands, latencies, ready, phase) for i in range(n)), return_exceptions=True
    )
    wall = time.perf_counter() - start
    await pool.aclose()
    errors = [r for r in results if isinstance(r, BaseException)]
    failures = sum(r for r in results if isinstance(r, int)) + len(errors) * commands
    print(
        f"{n} sandboxes x {commands} commands: wall {wall:.1f} s (including creation and removal), "
        f"failures={failures}" + (f", errors: {errors[:2]}" if errors else "")
    )
    cmd_wall = phase["end"] - phase["start"]
    print(
        f"command phase: {n * commands} commands in {cmd_wall:.1f} s = {n * commands / cmd_wall:.1f} commands/s "
        f"(each starts a python3 interpreter; 2-core host)"
    )
    print(summary("command latency (python3 -c)", latencies))
    print(f"containers left: {len(list_containers(run_id=RUN_ID))}")


if __name__ == "__main__":
    asyncio.run(main(*(int(a) for a in sys.argv[1:3])))
