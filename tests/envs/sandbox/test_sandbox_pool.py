"""SandboxPool: warm spares, refills, rate limit, no reuse, and a clean shutdown."""

from __future__ import annotations

import asyncio
import time

import pytest

from rollgym.envs.sandbox import RUN_ID, ImageError, SandboxConfig, SandboxPool, list_containers

pytestmark = pytest.mark.docker


async def test_warm_acquire_is_fast_and_spares_are_refilled(base_image):
    pool = SandboxPool(warm=2)
    cfg = SandboxConfig(image=base_image, task_id="pool")
    try:
        await pool.prewarm(cfg)
        start = time.perf_counter()
        sb = await pool.acquire(cfg.model_copy(update={"task_id": "other-task"}))
        took = time.perf_counter() - start
        assert took < 0.05, f"warm acquire took {took * 1000:.1f} ms"
        assert (await sb.aexec("echo ready")).output.strip() == "ready"
        for _ in range(100):
            if len(pool._spares[next(iter(pool._spares))]) == 2:
                break
            await asyncio.sleep(0.1)
        assert pool.created == 3
        await pool.release(sb)
        assert sb.closed
        async with pool.sandbox(cfg) as sb2:
            assert sb2 is not sb and not sb2.closed
    finally:
        await pool.aclose()
    await asyncio.sleep(0.2)
    assert not [n for n in list_containers(run_id=RUN_ID) if "-pool-" in n]


async def test_rate_limit_spaces_out_creations(base_image):
    pool = SandboxPool(warm=0, creates_per_s=4)
    cfg = SandboxConfig(image=base_image, task_id="rate", use_runner=False)
    start = time.monotonic()
    sandboxes = await asyncio.gather(*(pool.acquire(cfg) for _ in range(4)))
    assert time.monotonic() - start >= 0.7  # 4 creations at 4/s: the last starts >= 0.75 s after the first
    await asyncio.gather(*(pool.release(sb) for sb in sandboxes))
    await pool.aclose()


async def test_missing_image_fails_fast_with_a_clear_error(docker_engine):
    pool = SandboxPool(warm=0)
    with pytest.raises(ImageError, match="not found"):
        await pool.acquire(SandboxConfig(image="rollgym/no-such-image:nope"))
    await pool.aclose()
