"""What every runner reports, measured the same way in every framework's process (stdlib only: each peer runs in
its own venv). A runner warms up with a few episodes (imports, connection pools, caches), then runs the measured
batch and prints one JSON line: turns, sampled tokens, wall and CPU seconds, peak RSS, errors.

CPU is `time.process_time()` of the runner (all its threads) plus what its framework's own helper processes used
during the batch (an OpenEnv environment server: `/proc/PID/stat`). The model server is never
counted. Peak RSS per concurrent rollout is (peak RSS during the batch - RSS after the warm-up) / concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

SMALL_WARMUP = 4


@dataclass
class Counts:
    """What the episodes of one batch did, filled in by the runner's episode function."""

    turns: int = 0
    sampled: int = 0
    errors: int = 0
    first_error: str = ""
    episodes: list = field(default_factory=list)

    def failed(self, exc: BaseException) -> None:
        self.errors += 1
        self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"[:300]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", required=True, help="the workload JSON written by bench_peers.py")
    parser.add_argument("--base-url", required=True, help="the model server, http://127.0.0.1:PORT/v1")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=SMALL_WARMUP)
    parser.add_argument("--model", default="instant")
    return parser.parse_args()


def load_workload(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def rss_now_kib() -> int:
    """Resident set size right now (KiB), from /proc."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS, so the batch's own peak is measured."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def hwm_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return peak_rss_kib()


async def gather_bounded(episode: Callable[[int], Awaitable[None]], indices: list[int], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await episode(i)

    await asyncio.gather(*(one(i) for i in indices))


def report(
    framework: str,
    version: str,
    counts: Counts,
    wall: float,
    cpu: float,
    base_kib: int,
    peak_kib: int,
    concurrency: int,
    extra: dict | None = None,
) -> None:
    row = {
        "framework": framework,
        "version": version,
        "concurrency": concurrency,
        "episodes": len(counts.episodes) or None,
        "turns": counts.turns,
        "sampled": counts.sampled,
        "errors": counts.errors,
        "first_error": counts.first_error,
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_base_kib": base_kib,
        "rss_peak_kib": peak_kib,
        **(extra or {}),
    }
    print("RESULT " + json.dumps(row), flush=True)


class Clock:
    """Wall and CPU seconds of a block, and the peak RSS reached inside it."""

    def __enter__(self) -> Clock:
        reset_peak()
        self.base_kib = rss_now_kib()
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0
        self.peak_kib = hwm_kib()


def proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a helper process has used so far, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_kib(pid: int, key: str = "VmHWM") -> int:
    """A helper process's peak (VmHWM) or current (VmRSS) resident size, KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def proc_reset_peak(pid: int) -> None:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def fail(message: str) -> None:
    print(f"UNAVAILABLE {message}", flush=True)
    sys.exit(3)
