"""PID 1 of every sandbox: keeps the container alive until its TTL, and, with a lease, only while its owner renews
it; reaps orphans; cannot be killed from inside (a PID namespace's init gets no signal it has no handler for, and
`kill -9 -1` spares it), so an agent that kills every process it can ends its own commands, not the sandbox.

The lease (lease.py): each SIGUSR1 renews it (sent by the in-container runner when the owner's heartbeat arrives,
or by the daemon from outside); when none came for `lease_s` seconds the owner is taken for dead and PID 1 exits,
which ends the container (and, with `auto_remove`, removes it) with no operator and no surviving host. Time the
container spent frozen (`docker pause`, a commit) does not count against the lease. Each renewal is written to the
container's log as `lease <unix time>` (`last_renewal`): `rollgym sandbox list` shows its age from there, a place
no command in the sandbox can delete. SIGTERM counts only from outside the container (`docker stop`: the sender's
pid is not visible, 0). Images without python3 fall back to `sleep TTL` as PID 1: no reaping, no lease. As root,
PID 1 first gives the root directory the mode Docker gives it (0755; Podman's is 0555, which root without
CAP_DAC_OVERRIDE cannot write), so a sandbox's commands meet the same filesystem on either runtime."""

from __future__ import annotations

import docker.errors
import requests.exceptions

LOG_PREFIX = "lease "

SOURCE = r"""
import os, signal, sys, time
ttl, lease = float(sys.argv[1]), float(sys.argv[2])
start = time.monotonic()
deadline, renewed = start + ttl, start
WAITED = [signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGUSR1]
signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
if os.getuid() == 0:  # Podman makes the root directory 0555; Docker's 0755 lets root (with no capability) write it
    try:
        if not os.stat("/").st_mode & 0o200:
            os.chmod("/", 0o755)
    except OSError:
        pass


def note(text):
    try:
        os.write(1, (text + "\n").encode())
    except OSError:
        pass


if lease > 0:
    note("lease %d" % time.time())
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    now = time.monotonic()
    if now >= deadline:
        sys.exit(0)
    wait = min(deadline - now, 60.0)
    if lease > 0:
        if now - renewed >= lease:
            if signal.sigtimedwait([signal.SIGUSR1], 0) is None:  # none pending either: the owner is gone
                note("lease lapsed")
                sys.exit(3)
            renewed = now
        wait = min(wait, renewed + lease - now)
    info = signal.sigtimedwait(WAITED, max(wait, 0.0))
    overslept = time.monotonic() - now - max(wait, 0.0)
    if overslept > 1.0:  # frozen meanwhile (paused, committed): that time is not the owner's silence
        renewed += overslept
    if info is None:
        continue
    if info.si_signo == signal.SIGUSR1:
        renewed = time.monotonic()
        note("lease %d" % time.time())
    elif info.si_signo != signal.SIGCHLD and info.si_pid == 0:
        sys.exit(0)
"""


def keepalive_command(ttl_s: int, lease_s: float) -> list[str]:
    """The container's command: the python3 keep-alive when the image has python3, else `sleep` (`lease_s` 0: none)."""
    script = 'if command -v python3 >/dev/null 2>&1; then exec python3 -c "$2" "$0" "$1"; else exec sleep "$0"; fi'
    return ["/bin/sh", "-c", script, str(int(ttl_s)), f"{lease_s:g}", SOURCE]


def last_renewal(api: docker.APIClient, container_id: str) -> float | None:
    """When the container's lease was last renewed (unix time, from its log), None when it has no lease or its log
    cannot be read (a log driver that keeps nothing, the container gone)."""
    try:
        tail = api.logs(container_id, stdout=True, stderr=False, tail=2)
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return None
    lines = tail.decode(errors="replace").splitlines() if isinstance(tail, bytes) else []
    stamps = [line[len(LOG_PREFIX) :] for line in lines if line.startswith(LOG_PREFIX)]
    try:
        return float(stamps[-1]) if stamps else None
    except ValueError:
        return None
