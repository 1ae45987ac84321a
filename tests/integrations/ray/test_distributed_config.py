"""`RayConfig` from what users pass: `run_rollouts(ray=...)` values and the `generate` flags."""

from __future__ import annotations

import pytest
import typer

from rollgym.cli.generate import ray_options
from rollgym.errors import UsageError
from rollgym.integrations.ray import RayConfig, as_ray_config


def test_ray_values_become_one_config():
    assert as_ray_config(None) is None and as_ray_config(False) is None  # one process: no Ray at all
    assert as_ray_config(None, workers=3) == RayConfig(actors=3)  # --workers alone: a local instance
    assert as_ray_config(True) == RayConfig()
    assert as_ray_config("auto", workers=2) == RayConfig(address="auto", actors=2)
    assert as_ray_config(RayConfig(max_retries=3), workers=2).actors == 2
    with pytest.raises(UsageError, match="RayConfig"):
        as_ray_config(4)
    with pytest.raises(ValueError):
        RayConfig(max_retries=-1)


def test_generate_flags_become_a_config():
    assert ray_options(None, None, 1, 1) is None
    assert ray_options("local", None, 1, 4) == RayConfig(actors=4)
    config = ray_options("ray://head:10001", ["docker=1", "gpu=0.5"], 2, 1)
    assert config == RayConfig(address="ray://head:10001", resources={"docker": 1.0, "gpu": 0.5}, max_retries=2)
    with pytest.raises(typer.BadParameter, match="NAME=AMOUNT"):
        ray_options("auto", ["docker=lots"], 1, 1)


async def test_the_head_watchdog_reports_a_head_silent_for_the_timeout_only():
    import asyncio
    import socket
    import time

    from rollgym.integrations.ray.cluster import head_lost, head_of

    assert head_of(None, RayConfig(address="ray://head.example:10001")) == ("head.example", 10001)
    server = socket.create_server(("127.0.0.1", 0))
    watch = asyncio.create_task(head_lost(server.getsockname(), timeout_s=0.5, period_s=0.1))
    await asyncio.sleep(0.8)
    assert not watch.done()  # the head answers
    server.close()
    t0 = time.monotonic()
    silent_s = await asyncio.wait_for(watch, 5)
    assert silent_s >= 0.5 and time.monotonic() - t0 < 2
