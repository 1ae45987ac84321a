"""Sandbox leases: a sandbox lives only while the process that owns it says so.

Every sandbox with a lease (`SandboxConfig.lease_s`, 60 s by default) starts its PID 1 with that lease
(keepalive.py). One thread per owning process, the `LeaseKeeper`, renews the lease of each of its live sandboxes
`RENEWALS_PER_LEASE` times per lease, whatever the rollouts are doing (a tool call running for an hour, an engine
turn that takes minutes, an event loop blocked by a bug): renewals depend only on this thread being scheduled.
A renewal is a ~20-byte frame on the socket the owner already holds to the sandbox's runner (runner_client.py),
which the runner turns into SIGUSR1 for PID 1: no new connection, no daemon call, no file on the owner's disk, so it
costs the same on a remote Docker host (ssh://, tcp://) where no bind mount could reach the owner. A sandbox without
a runner (`use_runner=False`, or its runner gone) is renewed by the daemon instead (a kill API call with SIGUSR1;
a few ms of daemon time each, so `DAEMON_RENEWALS_PER_LEASE` times per lease), in a small pool of threads, so one
slow daemon holds up no other sandbox.

When the owner dies without running any code (SIGKILL, the OOM killer, its machine or Ray node lost), renewals stop
and each sandbox ends itself once its lease has passed: no operator, no `prune`, no surviving host needed. An owner
that is stopped (SIGSTOP, a debugger that halts every thread) stops renewing too and loses its sandboxes after the
lease: a documented choice (a paused owner cannot tell a live sandbox from a leaked one); set `lease_s=0` (or
`ROLLGYM_SANDBOX_LEASE_S=0`) to rely on the TTL alone while debugging. A debugger that halts one thread (pdb at a
breakpoint) leaves this thread running. The TTL (`ttl_s`) stays the last resort."""

from __future__ import annotations

import os
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from rollgym.errors import UsageError

LEASE_ENV = "ROLLGYM_SANDBOX_LEASE_S"
DEFAULT_LEASE_S = 60.0
#: Renewals sent per lease: five may be lost or late before a live owner's sandbox ends.
RENEWALS_PER_LEASE = 6
#: Renewals per lease through the daemon (the fallback): each costs a daemon request, 20-60x a runner frame.
DAEMON_RENEWALS_PER_LEASE = 3
#: The shortest lease accepted: a renewal every 1/6 s per sandbox is already a busy owner.
MIN_LEASE_S = 1.0
#: How long a renewal through the daemon may take before it is given up (the next one comes soon).
LEASE_CALL_TIMEOUT_S = 10.0


def lease_seconds(configured: float | None) -> float:
    """A sandbox's lease: `configured` when set, else `ROLLGYM_SANDBOX_LEASE_S`, else 60 s; 0 means no lease."""
    if configured is None:
        raw = os.environ.get(LEASE_ENV, "").strip()
        try:
            configured = float(raw) if raw else DEFAULT_LEASE_S
        except ValueError:
            raise UsageError(f"{LEASE_ENV}={raw!r}: expected seconds (e.g. 60), or 0 for no lease") from None
    if 0 < configured < MIN_LEASE_S or configured < 0:
        raise UsageError(f"a sandbox lease of {configured:g} s: use 0 (no lease) or at least {MIN_LEASE_S:g} s")
    return configured


class Leased(Protocol):
    """A sandbox whose lease the keeper renews."""

    lease_s: float

    def renew_lease(self) -> bool:
        """Renew over the owner's own channel at ~no cost; False when that channel cannot take it now."""
        ...

    def signal_lease(self) -> None:
        """Renew through the daemon (may block on a slow daemon)."""
        ...


class LeaseKeeper:
    """Renews the leases of this process's sandboxes from one thread (started on the first sandbox)."""

    def __init__(self, daemon_threads: int = 4) -> None:
        self._held: weakref.WeakSet[Leased] = weakref.WeakSet()
        # per sandbox: its last renewal through the daemon, and when it was sent
        self._through_daemon: weakref.WeakKeyDictionary[Leased, tuple[Future, float]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(daemon_threads, thread_name_prefix="rollgym-lease-daemon")
        self._period_s = float("inf")
        self.renewals = 0  # heartbeats sent so far (benchmarks/bench_leases.py)

    def hold(self, sandbox: Leased) -> None:
        """Renew `sandbox`'s lease from now until `drop` (or until it is garbage: then it ends by itself)."""
        with self._lock:
            self._held.add(sandbox)
            wake = sandbox.lease_s / RENEWALS_PER_LEASE < self._period_s  # the first, or a shorter lease
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="rollgym-lease-keeper", daemon=True)
                self._thread.start()
        if wake:
            self._wake.set()

    def drop(self, sandbox: Leased) -> None:
        """Stop renewing (the sandbox is being closed)."""
        with self._lock:
            self._held.discard(sandbox)

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def _run(self) -> None:
        while True:
            with self._lock:
                held = list(self._held)
                self._period_s = min((s.lease_s for s in held), default=float("inf")) / RENEWALS_PER_LEASE
            if not held:
                self._wake.wait()
                self._wake.clear()
                continue
            started = time.monotonic()
            for sandbox in held:
                self._renew(sandbox)
            period = self._period_s
            del held  # no strong reference kept between rounds: a sandbox nobody holds is collected (and lapses)
            self._wake.wait(max(0.0, period - (time.monotonic() - started)))
            self._wake.clear()

    def _renew(self, sandbox: Leased) -> None:
        try:
            if sandbox.renew_lease():
                self.renewals += 1
                return
        except Exception:  # noqa: BLE001 - one sandbox's failure never stops the others' renewals
            pass
        last = self._through_daemon.get(sandbox)
        now = time.monotonic()
        if last is not None and (not last[0].done() or now - last[1] < sandbox.lease_s / DAEMON_RENEWALS_PER_LEASE):
            return  # the last one is still on its way (a slow daemon), or recent enough
        self._through_daemon[sandbox] = (self._pool.submit(sandbox.signal_lease), now)
        self.renewals += 1


KEEPER = LeaseKeeper()
