"""Docker vs Podman for rollgym's sandboxes (issue 32, item 6): starts per second in bursts of N concurrent
`start_sandbox` calls (create + start + runner handshake), and the exec round trip of `true` through the persistent
runner and through plain exec, on each runtime, interleaved round by round (the order alternating) so the machine's
drift (up to 2x here) hits both alike; Podman/Docker ratios are medians of the per-round ratios of one run.

    .venv/bin/python benchmarks/bench_runtimes.py [--n 8] [--rounds 5] [--execs 100]

Podman is the local one, served by `.ci/docker-up --podman` (started if it is down), with rollgym's base image.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from _common import podman, setup
from bench_hosts import burst
from exec_roundtrip import timed

from rollgym.envs.sandbox import DEFAULT_HOST, SandboxConfig, list_containers, start_sandbox

RUN_ID = "bench-runtimes"


def _p50_ms(fn, n: int) -> float:
    return statistics.median(timed(fn, n)) * 1000


async def one_round(cfg: SandboxConfig, n: int, execs: int) -> dict[str, float]:
    """One runtime's figures for one round: starts/s of a burst, and exec p50s in one fresh sandbox."""
    rate = await burst(cfg, n)
    sb = await start_sandbox(cfg.model_copy(update={"task_id": "bench-exec"}))
    try:
        runner = await asyncio.to_thread(_p50_ms, lambda: sb.exec("true"), execs)
        plain = await asyncio.to_thread(_p50_ms, lambda: sb._exec_plain("true", 30, "/", None, 10_000), execs // 4)
    finally:
        await sb.aclose()
    return {"starts/s": rate, "runner exec p50 ms": runner, "plain exec p50 ms": plain}


async def bench(image: str, podman: str, n: int, rounds: int, execs: int) -> dict[str, list[dict[str, float]]]:
    """Each runtime's figures, round by round."""
    hosts = {"docker": DEFAULT_HOST, "podman": podman}
    base = SandboxConfig(image=image, run_id=RUN_ID)
    for host in hosts.values():  # warm-up: clients, image checks, page cache
        await burst(base.model_copy(update={"docker_host": host}), 2)
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in hosts}
    for r in range(rounds):
        for name in list(hosts) if r % 2 == 0 else list(reversed(hosts)):
            figures[name].append(await one_round(base.model_copy(update={"docker_host": hosts[name]}), n, execs))
    return figures


def table(figures: dict[str, list[dict[str, float]]], n: int, execs: int) -> str:
    docker, podman = figures["docker"], figures["podman"]
    lines = [
        f"bursts of {n} concurrent starts, {execs} runner execs per round, {len(docker)} interleaved rounds",
        "| figure | Docker (median) | Podman (median) | Podman / Docker (median of per-round ratios) | range |",
        "|---|---|---|---|---|",
    ]
    for key in docker[0]:
        ratios = [p[key] / d[key] for d, p in zip(docker, podman, strict=True)]
        lines.append(
            f"| {key} | {statistics.median(d[key] for d in docker):.2f} | "
            f"{statistics.median(p[key] for p in podman):.2f} | {statistics.median(ratios):.2f}x | "
            f"{min(ratios):.2f}x-{max(ratios):.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=8, help="sandboxes per burst")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--execs", type=int, default=100, help="runner execs per round (plain exec: a quarter)")
    args = parser.parse_args()
    image = setup()
    address = podman(image)
    print(table(asyncio.run(bench(image, address, args.n, args.rounds, args.execs)), args.n, args.execs))
    assert not list_containers(run_id=RUN_ID, docker_host=[DEFAULT_HOST, address])


if __name__ == "__main__":
    main()
