"""Rollout actors for a call: created concurrently, or taken warm from this driver's pool (`keep_actors`).

An actor's start-up (a worker process importing rollgym) costs seconds; a driver that runs many calls
(a trainer, a benchmark) keeps its actors with `keep_actors=True` and pays it once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from rollgym.errors import ClusterLostError
from rollgym.integrations.ray.config import RayConfig

_POOL: dict[tuple, list[Member]] = {}


@dataclass
class Member:
    """A live actor handle and where it runs (filled in by `setup`)."""

    actor: Any
    where: dict = field(default_factory=dict)


def _key(config: RayConfig) -> tuple:
    return (config.address, tuple(sorted(config.resources.items())), config.num_cpus)


def _check_placeable(ray: Any, config: RayConfig) -> None:
    """Fail at once when no live node offers what an actor needs (Ray would wait for one forever)."""
    need = {"CPU": config.num_cpus, **config.resources}
    for node in ray.nodes():
        if node.get("Alive") and all(node.get("Resources", {}).get(k, 0) >= v for k, v in need.items() if v):
            return
    raise ClusterLostError(f"no live node of the Ray cluster offers what a rollout actor needs ({need})")


async def acquire(config: RayConfig, n: int, fresh: bool = False) -> list[Member]:
    """`n` actors: warm ones from the pool first (unless `fresh`), then new ones."""
    import ray

    from rollgym.integrations.ray.actor import RolloutActor
    from rollgym.integrations.ray.cluster import off_loop

    warm = _POOL.pop(_key(config), []) if config.keep_actors and not fresh else []
    members, spare = warm[:n], warm[n:]
    if spare:
        _POOL[_key(config)] = spare
    if len(members) < n:
        await off_loop(_check_placeable, ray, config)
        cls = ray.remote(RolloutActor).options(
            num_cpus=config.num_cpus, resources=dict(config.resources) or None, max_restarts=0, max_task_retries=0
        )
        members += [Member(cls.remote()) for _ in range(n - len(members))]
    if fresh:
        await _wait_placed(members, config.connect_timeout_s)
    return members


async def _wait_placed(members: list[Member], timeout_s: float) -> None:
    """New actors that cannot be placed within `timeout_s` (their node died, no room): the cluster is lost."""
    pings = [asyncio.ensure_future(m.actor.where.remote()) for m in members]
    done, _ = await asyncio.wait(pings, timeout=timeout_s)
    if not any(not p.exception() for p in done):
        import ray

        for m in members:
            ray.kill(m.actor)
        raise ClusterLostError(f"no new rollout actor could be placed within {timeout_s:g} s")


async def release(config: RayConfig, members: list[Member]) -> None:
    """After a call: close each actor's engine; keep the actors warm (`keep_actors`) or end them."""
    import ray

    if not members:
        return
    closes = [asyncio.ensure_future(m.actor.close.remote()) for m in members]
    await asyncio.wait(closes, timeout=30.0)
    if config.keep_actors:
        _POOL.setdefault(_key(config), []).extend(
            m for m, c in zip(members, closes, strict=True) if c.done() and not c.exception()
        )
        return
    for m in members:
        ray.kill(m.actor)


def forget(config: RayConfig) -> None:
    """Drop the kept actors of a cluster that is gone (nothing there answers a kill)."""
    _POOL.pop(_key(config), None)


def drop_pool() -> None:
    """End every kept actor (e.g. before `ray.shutdown`)."""
    import ray

    for members in _POOL.values():
        for m in members:
            ray.kill(m.actor)
    _POOL.clear()
