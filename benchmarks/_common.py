"""Shared helpers for the benchmarks: start the engine (and Podman), get the base image, summarise timings."""

from __future__ import annotations

import statistics
import sys


def setup() -> str:
    from rollgym.envs.sandbox import bootstrap_base_image, ensure_engine

    ok, why = ensure_engine()
    if not ok:
        sys.exit(f"no Docker engine: {why}")
    return bootstrap_base_image(log=lambda _m: None)


def podman(image: str) -> str:
    """The local Podman's API address (`.ci/docker-up --podman`, started if it is down), with `image` copied in."""
    import subprocess
    from pathlib import Path

    from rollgym.envs.sandbox import DEFAULT_HOST
    from rollgym.envs.sandbox.host_images import ensure_image_on
    from rollgym.envs.sandbox.runtime import ensure_podman

    up = Path(__file__).resolve().parents[1] / ".ci" / "docker-up"
    subprocess.run(["bash", str(up), "--podman"], check=True, stdout=subprocess.DEVNULL)
    ok, address = ensure_podman()
    if not ok:
        sys.exit(f"no Podman: {address}")
    ensure_image_on(image, address, [DEFAULT_HOST])
    return address


def summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
    return f"{name:<34} n={len(ms):<4} p50={statistics.median(ms):8.2f} ms  p99={p99:8.2f} ms  mean={statistics.fmean(ms):8.2f} ms"
