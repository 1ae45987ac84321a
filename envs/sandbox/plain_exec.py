"""Plain `docker exec` with a real timeout: the command runs under `setsid`, its session id goes to a
pid file, and at the timeout a second exec SIGKILLs that whole process group and session, and every
process carrying the command's environment mark (children that left with `setsid` or a double fork)."""

from __future__ import annotations

import threading
import time
import uuid

import docker
import docker.errors
import requests.exceptions

from rollgym.envs.sandbox.capture import HeadTailBuffer, render_output
from rollgym.envs.sandbox.daemon import with_retries
from rollgym.envs.sandbox.errors import SandboxError
from rollgym.envs.sandbox.models import ExecResult

#: The environment variable that marks every process a command starts, so a timeout finds them all.
MARK = "ROLLGYM_CMD"


def _exit_code(api: docker.APIClient, exec_id: str) -> int | None:
    """The exec's exit code, once the daemon has marked it finished (its stream can end a bit earlier)."""
    for _ in range(50):
        try:
            info = api.exec_inspect(exec_id)
        except (docker.errors.APIError, requests.exceptions.RequestException):  # gone, or its daemon stopped answering
            return None
        if not info.get("Running"):
            return info.get("ExitCode")
        time.sleep(0.02)
    return None


def plain_exec(
    api: docker.APIClient,
    container_id: str,
    user: str,
    cmd: str,
    timeout: float,
    cwd: str,
    env: dict[str, str] | None,
    max_output: int,
) -> ExecResult:
    """Run `cmd`; `exit_code` is None after a timeout, or when the daemon lost the exec (dead container)."""
    token = uuid.uuid4().hex[:12]
    pidfile = f"/tmp/.rollgym-{token}.pid"
    script = f'echo $$ > {pidfile} 2>/dev/null; sh -c "$1"; rc=$?; rm -f {pidfile}; exit $rc'
    start = time.monotonic()
    exec_id = with_retries(
        lambda: api.exec_create(
            container_id,
            ["setsid", "-w", "sh", "-c", script, "sh", cmd],
            workdir=cwd,
            environment={**(env or {}), MARK: token},
            user=user,
        )["Id"],
        "exec",
    )
    try:
        stream = api.exec_start(exec_id, stream=True)
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:  # e.g. its daemon died just now
        raise SandboxError(f"exec: Docker daemon error: {exc}") from exc
    buf = HeadTailBuffer(max_output)
    done = threading.Event()

    def pump() -> None:
        try:
            for chunk in stream:
                buf.feed(chunk)
        except Exception:  # noqa: BLE001 - the stream ends when the container dies
            pass
        finally:
            done.set()

    threading.Thread(target=pump, name="rollgym-exec-pump", daemon=True).start()
    timed_out = not done.wait(timeout)
    if timed_out:
        kill = (
            f'sid=$(cat {pidfile} 2>/dev/null); [ -n "$sid" ] && {{ kill -9 -- -$sid; pkill -9 -s $sid; }}; rm -f {pidfile}; '
            f'for f in $(grep -lzx "{MARK}={token}" /proc/[0-9]*/environ 2>/dev/null); do p=${{f#/proc/}}; kill -9 ${{p%/environ}}; done'
        )
        try:
            api.exec_start(api.exec_create(container_id, ["sh", "-c", kill], user=user)["Id"])
        except (docker.errors.APIError, requests.exceptions.RequestException):
            pass
        done.wait(10)
    code = None if timed_out else _exit_code(api, exec_id)
    return ExecResult(
        exit_code=code,
        output=render_output(bytes(buf.head), bytes(buf.tail), buf.elided),
        timed_out=timed_out,
        truncated=buf.elided > 0,
        elided_bytes=buf.elided,
        duration_s=time.monotonic() - start,
        via="exec",
    )
