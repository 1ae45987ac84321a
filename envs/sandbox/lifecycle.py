"""Leak prevention: labels on every container, an atexit/SIGTERM backstop, and pruning orphans by label."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import threading
import time
import uuid
import weakref
from typing import TYPE_CHECKING

import docker.errors
import requests.exceptions
from pydantic import BaseModel

from rollgym.envs.sandbox.daemon import client_for, configured_hosts
from rollgym.envs.sandbox.errors import SandboxDeadError, SandboxError

if TYPE_CHECKING:
    from rollgym.envs.sandbox.docker_sandbox import DockerSandbox

LABEL = "rollgym"
HOST_LABEL = "rollgym.docker_host"  # the Docker host address (`rollgym.host` is the machine that created it)
RUN_ID = os.environ.get("ROLLGYM_RUN_ID") or uuid.uuid4().hex[:12]
HOST = socket.gethostname()
_LIVE: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()
_LOCK = threading.Lock()
_INSTALLED = False
_COLLECTING = threading.local()  # .group: the SandboxGroup this thread's new sandboxes join


def base_labels(run_id: str | None, task_id: str | None, ttl_s: int, lease_s: float = 0.0) -> dict[str, str]:
    """The labels every rollgym container carries (used by `prune`, the backstop and `rollgym sandbox list`)."""
    return {
        LABEL: "1",
        "rollgym.run_id": run_id or RUN_ID,
        "rollgym.task_id": (task_id or "")[:200],
        "rollgym.host": HOST,
        "rollgym.pid": str(os.getpid()),
        "rollgym.created": str(int(time.time())),
        "rollgym.expires": str(int(time.time()) + ttl_s),
        "rollgym.lease_s": f"{lease_s:g}",
    }


def owner_of(labels: dict[str, str]) -> str:
    """The process that started a container, as `machine:pid` (from its labels)."""
    return f"{labels.get('rollgym.host', '?')}:{labels.get('rollgym.pid', '?')}"


def register(sandbox: DockerSandbox) -> None:
    """Track a live sandbox so the process backstop can close it; install the backstop once. A sandbox created
    for a `SandboxGroup` that was stopped meanwhile is closed at once (`SandboxDeadError`)."""
    global _INSTALLED
    group = getattr(_COLLECTING, "group", None)
    if group is not None and not group._add(sandbox):
        sandbox.close()
        raise SandboxDeadError(f"sandbox {sandbox.name} was created after its run was stopped; it is removed")
    with _LOCK:
        _LIVE.add(sandbox)
        if _INSTALLED:
            return
        _INSTALLED = True
    atexit.register(close_all)
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:
            pass


def unregister(sandbox: DockerSandbox) -> None:
    with _LOCK:
        _LIVE.discard(sandbox)


def _on_sigterm(signum, frame) -> None:
    close_all()
    raise SystemExit(128 + signum)


_BUSY = threading.Condition()
_busy = 0  # sandboxes being created or closed right now, in threads no caller may be waiting for


@contextlib.contextmanager
def busy():
    """Mark a creation or a removal in progress, so `settle` waits for it."""
    global _busy
    with _BUSY:
        _busy += 1
    try:
        yield
    finally:
        with _BUSY:
            _busy -= 1
            _BUSY.notify_all()


def settle(timeout_s: float = 60.0) -> int:
    """Wait (up to `timeout_s`) for creations and removals still running in threads, then close what is left;
    for a process about to end without `atexit` (a Ray actor being stopped). Returns how many were left open."""
    with _BUSY:
        _BUSY.wait_for(lambda: _busy == 0, timeout_s)
    with _LOCK:
        left = len(_LIVE)
    close_all()
    return left


def close_all() -> None:
    """Close every sandbox this process still holds (atexit and SIGTERM)."""
    with _LOCK:
        live = list(_LIVE)
    for sb in live:
        try:
            sb.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


class SandboxGroup:
    """The sandboxes some threads create (each inside `with group.collecting():`), closed together by `stop()`,
    which also closes any created after it: a run stopped while its workers create sandboxes leaves none."""

    def __init__(self) -> None:
        self._live: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.stopped = False

    @contextlib.contextmanager
    def collecting(self):
        """The sandboxes this thread creates inside the block belong to the group."""
        previous = getattr(_COLLECTING, "group", None)
        _COLLECTING.group = self
        try:
            yield self
        finally:
            _COLLECTING.group = previous

    def _add(self, sandbox: DockerSandbox) -> bool:
        with self._lock:
            if not self.stopped:
                self._live.add(sandbox)
            return not self.stopped

    def stop(self) -> None:
        """Close every sandbox of the group, now and as later ones are created."""
        with self._lock:
            self.stopped = True
            live = list(self._live)
        for sb in live:
            try:
                sb.close()
            except Exception:  # noqa: BLE001 - best effort while stopping
                pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_orphan(labels: dict[str, str], now: float | None = None) -> bool:
    """A container whose owner process on this host is gone, or whose TTL has passed."""
    now = now or time.time()
    if float(labels.get("rollgym.expires", "0") or 0) < now:
        return True
    if labels.get("rollgym.host") == HOST:
        try:
            return not _pid_alive(int(labels.get("rollgym.pid", "0")))
        except ValueError:
            return True
    return False


class ContainerRow(BaseModel):
    """One rollgym container as `rollgym sandbox list` shows it."""

    name: str
    id: str = ""
    host: str  # the Docker host address it was listed on
    state: str
    run_id: str
    task_id: str
    owner: str = ""  # machine:pid of the process that started it
    lease_s: float = 0.0  # its lease (lease.py); 0: none
    lease_age_s: float | None = None  # seconds since its lease was last renewed, when asked (host_listing.py)
    labels: dict[str, str]


def _rows(host: str, run_id: str | None) -> list[dict]:
    filters = {"label": [f"{LABEL}=1"] + ([f"rollgym.run_id={run_id}"] if run_id else [])}
    # The low-level listing: `containers.list` inspects each container, which races with their removal.
    try:
        rows = client_for(host).api.containers(all=True, filters=filters)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxError(f"Docker host {host}: cannot list containers: {exc}") from exc
    # A row with no name is a ghost: a creation cut short by the daemon's crash, listed as Dead while inspect and
    # remove say no such container (dockerd 20.10, after SIGKILL). Nothing runs and nothing can be removed.
    return [c for c in rows if c.get("Names")]


def _name(container: dict) -> str:
    return container["Names"][0].lstrip("/")


def list_sandboxes(run_id: str | None = None, docker_host: str | list[str] | None = None) -> list[ContainerRow]:
    """rollgym containers (optionally of one run) on every configured host, running or not."""
    return [_row(host, c) for host in configured_hosts(docker_host) for c in _rows(host, run_id)]


def _row(host: str, container: dict) -> ContainerRow:
    labels = container.get("Labels") or {}
    try:
        lease_s = float(labels.get("rollgym.lease_s") or 0)
    except ValueError:
        lease_s = 0.0
    return ContainerRow(
        name=_name(container),
        id=container.get("Id", ""),
        host=host,
        state=container.get("State", ""),
        run_id=labels.get("rollgym.run_id", ""),
        task_id=labels.get("rollgym.task_id", ""),
        owner=owner_of(labels),
        lease_s=lease_s,
        labels=labels,
    )


def list_containers(run_id: str | None = None, docker_host: str | list[str] | None = None) -> list[str]:
    """Names of rollgym containers (optionally of one run) on every configured host, running or not."""
    return [row.name for row in list_sandboxes(run_id, docker_host)]


def prune(
    all_containers: bool = False, run_id: str | None = None, docker_host: str | list[str] | None = None
) -> list[str]:
    """Remove rollgym containers on every configured host: orphans by default, one run's with `run_id`, or all
    with `all_containers`."""
    removed = []
    for host in configured_hosts(docker_host):
        api = client_for(host).api
        for c in _rows(host, run_id):  # no per-container inspect: no race with removals
            if not (all_containers or run_id or is_orphan(c.get("Labels") or {})):
                continue
            try:
                api.remove_container(c["Id"], force=True)
                removed.append(_name(c))
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    raise
    return removed
