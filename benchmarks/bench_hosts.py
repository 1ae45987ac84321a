"""Sandbox starts per second with one Docker host vs two (issue 14): bursts of N concurrent `start_sandbox`
calls (create + start + runner handshake), one burst per setting per round, the settings interleaved so the
machine's drift (up to 2x here) hits both alike; the table gives each setting's median rate and the median of
the per-round ratios.

    .venv/bin/python benchmarks/bench_hosts.py [--n 12] [--rounds 5] [--second unix:///run/rollgym-docker2.sock]

The second host defaults to the tests' second dockerd (started with `.ci/docker-up --second` if it is down).
Both daemons on one machine share its cores: the gain measured here is a floor for daemons on separate machines.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
from pathlib import Path

from _common import setup

from rollgym.envs.sandbox import DEFAULT_HOST, SandboxConfig, client_for, list_containers, start_sandbox

DOCKER2 = "unix:///run/rollgym-docker2.sock"


async def burst(cfg: SandboxConfig, n: int) -> float:
    """Start `n` sandboxes at once; the rate in starts per second (closing them is not timed)."""
    t0 = time.perf_counter()
    made = await asyncio.gather(*(start_sandbox(cfg.model_copy(update={"task_id": f"bench-{k}"})) for k in range(n)))
    rate = n / (time.perf_counter() - t0)
    await asyncio.gather(*(sb.aclose() for sb in made))
    return rate


async def bench_hosts(image: str, second: str, n: int = 12, rounds: int = 5) -> dict[str, list[float]]:
    """Rates per round for one host and for two, interleaved (the order alternates each round)."""
    settings = {"1 host": [DEFAULT_HOST], "2 hosts": [DEFAULT_HOST, second]}
    rates: dict[str, list[float]] = {name: [] for name in settings}
    base = SandboxConfig(image=image, run_id="bench-hosts")
    for hosts in settings.values():  # warm-up: clients, image checks, page cache
        await burst(base.model_copy(update={"docker_host": hosts}), 2)
    for r in range(rounds):
        order = list(settings) if r % 2 == 0 else list(reversed(settings))
        for name in order:
            rates[name].append(await burst(base.model_copy(update={"docker_host": settings[name]}), n))
    return rates


def table(rates: dict[str, list[float]], n: int) -> str:
    one, two = rates["1 host"], rates["2 hosts"]
    ratios = [b / a for a, b in zip(one, two, strict=True)]
    lines = [
        f"sandbox starts per second, bursts of {n} concurrent starts, {len(one)} interleaved rounds",
        "| setting | median starts/s | min | max |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {statistics.median(v):.2f} | {min(v):.2f} | {max(v):.2f} |" for name, v in rates.items()]
    lines.append(
        f"| ratio 2 hosts / 1 host (median of per-round ratios) | {statistics.median(ratios):.2f}x "
        f"| {min(ratios):.2f}x | {max(ratios):.2f}x |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=12, help="sandboxes per burst")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--second", default=DOCKER2, help="the second Docker host's address")
    args = parser.parse_args()
    run(args.n, args.rounds, args.second)


def run(n: int, rounds: int, second: str = DOCKER2) -> None:
    """Measure and print the table (also called by `bench_scale.py`, so both tables come from one run)."""
    image = setup()
    if second == DOCKER2:
        subprocess.run(
            ["bash", str(Path(__file__).resolve().parents[1] / ".ci" / "docker-up"), "--second"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    client_for(second).ping()
    rates = asyncio.run(bench_hosts(image, second, n, rounds))
    print(table(rates, n))
    assert not list_containers(run_id="bench-hosts", docker_host=[DEFAULT_HOST, second])


if __name__ == "__main__":
    main()
