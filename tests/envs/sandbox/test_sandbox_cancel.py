"""Cancelling a sandbox's creation (Ctrl-C, SIGTERM, a timeout during setup) leaves no container behind:
the worker thread finishes creating it, and it is closed at once (issue 17, item 4)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from rollgym.envs.sandbox import SandboxConfig, list_containers, start_sandbox

pytestmark = pytest.mark.docker


async def test_a_creation_cancelled_midway_is_closed_once_it_exists(base_image):
    run_id = f"cancel-{uuid.uuid4().hex[:8]}"
    tasks = [
        asyncio.create_task(start_sandbox(SandboxConfig(image=base_image, task_id=f"c{k}", run_id=run_id)))
        for k in range(3)
    ]
    await asyncio.sleep(0.05)  # the worker threads are talking to the daemon
    for task in tasks:
        task.cancel()
    for task in tasks:
        with pytest.raises(asyncio.CancelledError):
            await task
    seen = set()
    for _ in range(300):  # the threads finish creating; each container is then closed
        names = list_containers(run_id=run_id)
        seen |= set(names)
        if seen and not names:
            break
        await asyncio.sleep(0.1)
    assert list_containers(run_id=run_id) == [], "a cancelled creation leaked its container"
    assert seen, "the creations were cancelled midway: their containers existed, then were removed"


def test_creations_left_when_the_event_loop_ends_are_closed(base_image):
    """SIGTERM's path: the main task raises `Terminated`, `asyncio.run` cancels every remaining task
    (the creations' own included) and only waits for the executor's threads: no event-loop callback runs
    after that, so the thread must remove its container itself."""
    from rollgym.rollouts.stopping import Terminated

    run_id = f"loopend-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        for k in range(3):
            asyncio.create_task(start_sandbox(SandboxConfig(image=base_image, task_id=f"e{k}", run_id=run_id)))
        await asyncio.sleep(0.05)
        raise Terminated()

    with pytest.raises(Terminated):
        asyncio.run(main())
    for _ in range(300):  # a creation delivered just before the end is removed by a cleanup thread
        if not list_containers(run_id=run_id):
            break
        time.sleep(0.1)
    assert list_containers(run_id=run_id) == [], "creations cut off by the loop's end leaked their containers"
