"""Per-sandbox disk budgets. Where the storage driver enforces a size (`--storage-opt size=`: overlay2 on
xfs with pquota, btrfs, zfs) the daemon does it; elsewhere (overlay2 on ext4, the common case) one
thread per process measures the writable layer of every sandbox running a command and kills a container
over its budget. Either way the episode ends with `DiskLimitError`: the agent's doing, not infrastructure."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import docker
import docker.errors

if TYPE_CHECKING:
    from rollgym.envs.sandbox.docker_sandbox import DockerSandbox

_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
#: Storage drivers whose `size` storage option bounds a container's writable layer.
_SIZED_DRIVERS = {"btrfs", "zfs", "devicemapper", "windowsfilter"}
_driver_support: dict[int, bool] = {}


def parse_size(text: str) -> int:
    """`"4g"` -> 4294967296 (docker's units b, k, m, g, t, powers of 1024; `"4gb"` also reads as 4g)."""
    raw = text.strip().lower()
    if len(raw) > 1 and raw[-1] == "b" and raw[-2] in "kmgt":
        raw = raw[:-1]
    unit = raw[-1] if raw and raw[-1] in _UNITS else ""
    try:
        value = float(raw[:-1] if unit else raw) * _UNITS.get(unit, 1)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (e.g. 512m, 4g)") from None
    if value <= 0:
        raise ValueError(f"a size must be positive, got {text!r}")
    return int(value)


def storage_size_supported(client: docker.DockerClient) -> bool:
    """Whether this daemon's storage driver can cap a container's writable layer (cached per daemon)."""
    key = id(client.api)  # per client, i.e. per daemon (every unix socket's base_url is http+docker://localhost)
    if key not in _driver_support:
        try:
            info = client.info()
        except docker.errors.APIError:
            return False
        status = dict(info.get("DriverStatus") or [])
        driver = info.get("Driver", "")
        _driver_support[key] = driver in _SIZED_DRIVERS or (
            driver == "overlay2" and status.get("Backing Filesystem") == "xfs"
        )
    return _driver_support[key]


def storage_size_refused(client: docker.DockerClient) -> None:
    """The daemon refused `size` after all (e.g. xfs mounted without pquota): measure instead from now on."""
    _driver_support[id(client.api)] = False


class DiskWatch:
    """Every `interval_s`, the writable-layer size (`SizeRw`) of each sandbox with a command in flight;
    a container over its budget is killed. One daemon thread, started on first use.

    When a command ends it is measured once more: at once when it ran for `sync_after_s` or more (a write
    big enough to matter takes that long), else by the thread a moment later, so a 2 ms command does not
    pay the daemon's ~3 ms size query."""

    def __init__(self, interval_s: float = 2.0, sync_after_s: float = 0.05) -> None:
        self.interval_s, self.sync_after_s = interval_s, sync_after_s
        self._active: dict[DockerSandbox, int] = {}
        self._pending: set[DockerSandbox] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, sandbox: DockerSandbox) -> Iterator[None]:
        """Measure `sandbox` while the block runs (a command), and once more when it ends."""
        with self._lock:
            self._active[sandbox] = self._active.get(sandbox, 0) + 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="rollgym-disk-watch", daemon=True)
                self._thread.start()
        started = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                left = self._active.pop(sandbox) - 1
                if left:
                    self._active[sandbox] = left
                later = time.monotonic() - started < self.sync_after_s
                if later:
                    self._pending.add(sandbox)
            if later:
                self._wake.set()
            else:
                check(sandbox)

    def _run(self) -> None:
        last_round = time.monotonic()
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            now = time.monotonic()
            with self._lock:
                sandboxes = set(self._pending)
                self._pending.clear()
                if now - last_round >= self.interval_s:
                    sandboxes |= set(self._active)
                    last_round = now
            for sandbox in sandboxes:
                check(sandbox)


def check(sandbox: DockerSandbox) -> None:
    """Measure one sandbox's writable layer; over budget, record it and kill the container."""
    budget = sandbox.disk_budget
    if budget is None or sandbox.closed or sandbox.disk_used is not None:
        return
    try:  # the low-level listing computes the size for this one container (`inspect` cannot, in docker-py)
        listed = sandbox.client.api.containers(all=True, size=True, filters={"id": sandbox.container.id})
    except (docker.errors.APIError, OSError):
        return  # gone or busy: the exec path reports a dead container
    size = (listed[0].get("SizeRw") or 0) if listed else 0
    if size > budget:
        sandbox.disk_used = size
        with contextlib.suppress(docker.errors.APIError, OSError):
            sandbox.container.kill()


WATCH = DiskWatch()
