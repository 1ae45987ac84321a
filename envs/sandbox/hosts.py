"""Placement of sandboxes over several Docker hosts: the least-loaded host that answers, under a cap per host
(waiting for a slot when all are full); a host that stops answering leaves the rotation and is probed again
after a cooldown. Load is what this process started: live sandboxes per host."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass

import docker.errors
import requests.exceptions

from .daemon import DEFAULT_HOST, client_for, configured_hosts
from .errors import HostUnavailableError
from .host_images import forget

COOLDOWN_S = float(os.environ.get("ROLLGYM_HOST_COOLDOWN_S", "30"))
PROBE_TIMEOUT_S = 5.0


@dataclass
class HostState:
    """What this process knows of one Docker host."""

    address: str
    live: int = 0  # sandboxes this process holds there (reserved or running)
    down_until: float = 0.0  # 0: in rotation; else out until this monotonic time, then probed
    down_reason: str = ""
    probing: bool = False

    @property
    def up(self) -> bool:
        return self.down_until == 0.0


_STATES: dict[str, HostState] = {}
_COND = threading.Condition()


def _state(address: str) -> HostState:
    return _STATES.setdefault(address, HostState(address))


def is_unreachable(exc: BaseException) -> bool:
    """A failure that means the daemon itself does not answer (not an error it reported)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (requests.exceptions.ConnectionError, requests.exceptions.Timeout, ConnectionError,
                             FileNotFoundError, TimeoutError)):
            return True
        if isinstance(seen, HostUnavailableError):
            return True
        if isinstance(seen, docker.errors.DockerException) and "Error while fetching server API version" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def mark_down(address: str, reason: str) -> None:
    """Take a host out of rotation for `COOLDOWN_S` (then it is probed before being used again); its images
    are checked again when it is back."""
    with _COND:
        state = _state(address)
        state.down_until, state.down_reason = time.monotonic() + COOLDOWN_S, reason
        _COND.notify_all()
    forget(address)


def _probe(address: str) -> None:
    """Ping a host that was out of rotation; it comes back if it answers within `PROBE_TIMEOUT_S`."""
    try:
        client_for(address, timeout=PROBE_TIMEOUT_S).ping()
        ok, reason = True, ""
    except Exception as exc:  # noqa: BLE001 - any failure: still out
        ok, reason = False, f"{type(exc).__name__}: {exc}"
    with _COND:
        state = _state(address)
        state.probing = False
        if ok:
            state.down_until, state.down_reason = 0.0, ""
        else:
            state.down_until, state.down_reason = time.monotonic() + COOLDOWN_S, reason
        _COND.notify_all()


def _claim_probes(hosts: list[str]) -> list[str]:
    """Hosts out of rotation whose cooldown is over, now marked as being probed by the caller."""
    with _COND:
        now = time.monotonic()
        due = [h for h in hosts if not _state(h).up and now >= _state(h).down_until and not _state(h).probing]
        for h in due:
            _state(h).probing = True
        return due


def _pick(hosts: list[str], cap: int | None) -> str | None:
    with _COND:
        up = [_state(h) for h in hosts if _state(h).up]
        if not up:
            if any(_state(h).probing for h in hosts):
                return None  # another thread is probing: wait for its answer
            why = "; ".join(f"{h}: {_state(h).down_reason}" for h in hosts)
            raise HostUnavailableError(f"no Docker host answers ({why})")
        free = [s for s in up if cap is None or s.live < cap]
        if not free:
            return None
        best = min(free, key=lambda s: s.live)  # min keeps the first of equals: the configured order
        best.live += 1
        return best.address


def try_reserve(hosts: list[str], cap: int | None) -> str | None:
    """Reserve a slot on the least-loaded host in rotation (ties: the first listed); None when all are at
    the cap. `HostUnavailableError` naming the hosts when none answers."""
    for h in _claim_probes(hosts):
        _probe(h)
    return _pick(hosts, cap)


def reserve(hosts: list[str], cap: int | None) -> str:
    """`try_reserve`, waiting (blocking this thread) for a slot while every host is at its cap."""
    while True:
        host = try_reserve(hosts, cap)
        if host is not None:
            return host
        with _COND:
            _COND.wait(0.5)


async def areserve(hosts: list[str], cap: int | None, poll_s: float = 0.05) -> str:
    """`reserve` without blocking the event loop (probes run in threads) or a worker thread while waiting
    for a slot (worker threads also close sandboxes, which frees slots)."""
    while True:
        due = _claim_probes(hosts)
        if due:
            await asyncio.gather(*(asyncio.to_thread(_probe, h) for h in due))
        host = _pick(hosts, cap)
        if host is not None:
            return host
        await asyncio.sleep(poll_s)


def release(address: str) -> None:
    """Give back a slot (the sandbox is closed, or its creation failed)."""
    with _COND:
        state = _state(address)
        state.live = max(0, state.live - 1)
        _COND.notify_all()


def load(hosts: list[str] | None = None) -> dict[str, int]:
    """Live sandboxes per host, as this process counts them."""
    with _COND:
        return {h: _state(h).live for h in (hosts if hosts is not None else list(_STATES))}


def out_of_rotation() -> dict[str, str]:
    """Hosts out of rotation now, with why."""
    with _COND:
        return {h: s.down_reason for h, s in _STATES.items() if not s.up}


def home_client(docker_host: str | list[str] | None = None):
    """The client where images are built first: the first configured host in rotation (others get images
    from it, or build them, when a sandbox starts there: host_images.py)."""
    candidates = configured_hosts(docker_host)
    with _COND:
        home = next((h for h in candidates if _state(h).up), candidates[0])
    return client_for(home)


def reset(address: str | None = None) -> None:
    """Put a host (or all) back in rotation now (tests, or an operator who knows it is back)."""
    with _COND:
        for state in ([_state(address)] if address else list(_STATES.values())):
            state.down_until, state.down_reason = 0.0, ""
        _COND.notify_all()


__all__ = ["COOLDOWN_S", "DEFAULT_HOST", "areserve", "home_client", "is_unreachable", "load", "mark_down", "out_of_rotation",
           "release", "reserve", "reset", "try_reserve"]
