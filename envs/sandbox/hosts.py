"""Placement of sandboxes over several Docker hosts: the least-loaded host that answers, under a cap per host
(waiting for a slot when all are full); a host that stops answering leaves the rotation and is probed again
after a cooldown. Load is what this process started: live sandboxes per host, unless a `Ledger` shared by
several processes (the Ray actors of one run: `share`) counts them, so the choice and the cap hold across all."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Protocol

import docker.errors
import requests.exceptions

from rollgym.envs.sandbox.daemon import DEFAULT_HOST, client_for, configured_hosts
from rollgym.envs.sandbox.errors import HostUnavailableError
from rollgym.envs.sandbox.host_images import forget

COOLDOWN_S = float(os.environ.get("ROLLGYM_HOST_COOLDOWN_S", "30"))
PROBE_TIMEOUT_S = 5.0
_LOG = logging.getLogger(__name__)


class Ledger(Protocol):
    """Live sandboxes per host, counted for several processes at once. `take` picks, among `candidates` (the
    hosts in rotation, in configured order), the least-loaded one under `cap`, counts it and returns it (None:
    all at the cap); `give` uncounts one. Keys are `ledger_key`s: the same daemon has the same key everywhere."""

    def take(self, candidates: list[str], cap: int | None) -> str | None: ...

    async def atake(self, candidates: list[str], cap: int | None) -> str | None: ...

    def give(self, key: str) -> None: ...


_LEDGER: Ledger | None = None


def share(ledger: Ledger | None) -> None:
    """Count placements in `ledger` from now on (None: in this process only, the default). Slots another
    ledger counted are not given back to this one."""
    global _LEDGER
    with _COND:
        _LEDGER = ledger
        for state in _STATES.values():
            state.shared = 0


def ledger_key(address: str) -> str:
    """A daemon's name across machines: a tcp:// or ssh:// address is the same daemon wherever it is used from;
    the default engine (unless `DOCKER_HOST` names a remote one) or a unix socket is this machine's own."""
    if address == DEFAULT_HOST and os.environ.get("DOCKER_HOST", "").startswith(("tcp://", "ssh://")):
        address = os.environ["DOCKER_HOST"]
    if address.startswith(("tcp://", "ssh://", "https://", "http://")):
        return address
    return f"{socket.gethostname()}|{address}"


def _shared(hosts: list[str], cap: int | None) -> Ledger | None:
    """The ledger, when placement is a choice to share (several hosts, or a cap)."""
    return _LEDGER if _LEDGER is not None and (len(hosts) > 1 or cap is not None) else None


def _without_ledger(exc: BaseException, hosts: list[str], cap: int | None) -> str | None:
    """The ledger failed (its process died): stop sharing, and pick by this process's own count."""
    _ledger_failed(exc)
    return _pick(hosts, cap)


def _ledger_failed(exc: BaseException) -> None:
    _LOG.warning(
        "the shared sandbox placement ledger is gone (%s: %s); placing by this process's own count",
        type(exc).__name__,
        exc,
    )
    share(None)


@dataclass
class HostState:
    """What this process knows of one Docker host."""

    address: str
    live: int = 0  # sandboxes this process holds there (reserved or running)
    down_until: float = 0.0  # 0: in rotation; else out until this monotonic time, then probed
    down_reason: str = ""
    probing: bool = False
    shared: int = 0  # of `live`, the slots a shared ledger counted

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
        if isinstance(
            seen,
            (
                requests.exceptions.ConnectionError,
                requests.exceptions.Timeout,
                ConnectionError,
                FileNotFoundError,
                TimeoutError,
            ),
        ):
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


def _up(hosts: list[str]) -> list[HostState]:
    """Hosts in rotation (call holding `_COND`); `HostUnavailableError` when none is and none is being probed."""
    up = [_state(h) for h in hosts if _state(h).up]
    if not up and not any(_state(h).probing for h in hosts):
        why = "; ".join(f"{h}: {_state(h).down_reason}" for h in hosts)
        raise HostUnavailableError(f"no Docker host answers ({why})")
    return up


def _keys_up(hosts: list[str]) -> dict[str, str]:
    """The hosts in rotation by ledger key, for the ledger to choose from (none: wait for a probe)."""
    with _COND:
        up = _up(hosts)
    return {ledger_key(s.address): s.address for s in up}


def _counted(keys: dict[str, str], key: str | None) -> str | None:
    """The host the ledger chose (by key), counted here too (and given back to the ledger on `release`)."""
    address = keys.get(key) if key is not None else None
    if address is not None:
        with _COND:
            _state(address).live += 1
            _state(address).shared += 1
    return address


def _pick(hosts: list[str], cap: int | None) -> str | None:
    with _COND:
        up = _up(hosts)
        if not up:
            return None  # another thread is probing: wait for its answer
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
    ledger = _shared(hosts, cap)
    if ledger is None:
        return _pick(hosts, cap)
    keys = _keys_up(hosts)
    try:
        return _counted(keys, ledger.take(list(keys), cap) if keys else None)
    except Exception as exc:  # noqa: BLE001 - the ledger's process died
        return _without_ledger(exc, hosts, cap)


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
        ledger = _shared(hosts, cap)
        if ledger is None:
            host = _pick(hosts, cap)
        else:
            keys = _keys_up(hosts)
            try:
                host = _counted(keys, await ledger.atake(list(keys), cap) if keys else None)
            except Exception as exc:  # noqa: BLE001 - the ledger's process died
                host = _without_ledger(exc, hosts, cap)
        if host is not None:
            return host
        await asyncio.sleep(poll_s)


def release(address: str) -> None:
    """Give back a slot (the sandbox is closed, or its creation failed)."""
    with _COND:
        state = _state(address)
        state.live = max(0, state.live - 1)
        shared, state.shared = state.shared > 0, max(0, state.shared - 1)
        ledger = _LEDGER
        _COND.notify_all()
    if shared and ledger is not None:
        try:
            ledger.give(ledger_key(address))
        except Exception as exc:  # noqa: BLE001 - a failed ledger falls back to the local count
            _ledger_failed(exc)


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
        for state in [_state(address)] if address else list(_STATES.values()):
            state.down_until, state.down_reason = 0.0, ""
        _COND.notify_all()


__all__ = [
    "COOLDOWN_S",
    "DEFAULT_HOST",
    "Ledger",
    "areserve",
    "ledger_key",
    "share",
    "home_client",
    "is_unreachable",
    "load",
    "mark_down",
    "out_of_rotation",
    "release",
    "reserve",
    "reset",
    "try_reserve",
]
