"""PID 1 of every sandbox: keeps the container alive for `ttl_s`, reaps orphans, and cannot be killed from
inside (a PID namespace's init gets no signal it has no handler for, and `kill -9 -1` spares it), so an
agent that kills every process it can ends its own commands, not the sandbox. SIGTERM counts only from
outside the container (`docker stop`: the sender's pid is not visible, 0). Images without python3 fall
back to `sleep` as PID 1, which does not reap."""

from __future__ import annotations

SOURCE = r"""
import os, signal, sys, time
deadline = time.monotonic() + float(sys.argv[1])
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD, signal.SIGTERM, signal.SIGINT])
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    left = deadline - time.monotonic()
    if left <= 0:
        sys.exit(0)
    info = signal.sigtimedwait([signal.SIGCHLD, signal.SIGTERM, signal.SIGINT], min(left, 60))
    if info is not None and info.si_signo != signal.SIGCHLD and info.si_pid == 0:
        sys.exit(0)
"""


def keepalive_command(ttl_s: int) -> list[str]:
    """The container's command: the python3 keep-alive when the image has python3, else `sleep`."""
    script = 'if command -v python3 >/dev/null 2>&1; then exec python3 -c "$1" "$0"; else exec sleep "$0"; fi'
    return ["/bin/sh", "-c", script, str(int(ttl_s)), SOURCE]
