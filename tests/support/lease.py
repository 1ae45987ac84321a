"""Owners that die without running code, watched from outside: which of their containers are left, and how each ended.

A container's `die` event carries its exit code: `LAPSED` (3) when its own PID 1 ended it because its owner stopped
renewing its lease (envs/sandbox/keepalive.py), 137 when someone removed it by force. The events are read live, as
they happen: a daemon's log of past events keeps only its last 256, which other tests push out under xdist."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import docker

from rollgym.envs.sandbox import DEFAULT_HOST, configured_hosts, list_sandboxes

LAPSED = 3

OWNER = """
import asyncio, sys, time
from rollgym.envs.sandbox import SandboxConfig, start_sandbox

async def main():
    image, run_id, lease_s, host = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    made = [
        await start_sandbox(SandboxConfig(image=image, task_id="owner", run_id=run_id, lease_s=lease_s,
                                          docker_host=host, use_runner=use_runner))
        for use_runner in (True, False)  # renewed over the runner's socket, and through the daemon
    ]
    print(" ".join(sb.name for sb in made), flush=True)
    if sys.stdin.readline().startswith("eat"):  # until the OOM killer ends this process
        hog = []
        while True:
            hog.append(b"\\1" * (16 << 20))
    time.sleep(600)

asyncio.run(main())
"""


def start_owner(
    image: str, run_id: str, lease_s: float, docker_host: str = "default"
) -> tuple[subprocess.Popen, list[str]]:
    """A process that starts two sandboxes (one with the runner, one without) and waits; their names."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, image, run_id, str(lease_s), docker_host],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    names = proc.stdout.readline().split()
    assert len(names) == 2, f"the owner started no sandboxes (exit {proc.poll()})"
    return proc, names


class DeathWatch:
    """The exit code of every container of one run that dies on one daemon while the watch is open."""

    def __init__(self, run_id: str, docker_host: str = "default") -> None:
        self.run_id = run_id
        self.exits: dict[str, int] = {}
        # A client of its own (closing a stream breaks its connection, which a shared client would hand out again);
        # filtered here, not by the daemon: Podman 4.3's compatible API matches no event given these filters.
        address = configured_hosts(docker_host)[0]
        self._client = docker.from_env() if address == DEFAULT_HOST else docker.DockerClient(base_url=address)
        self._stream = self._client.api.events(decode=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self._stream:
                attrs = (event.get("Actor") or {}).get("Attributes") or {}
                if event.get("Action") == "die" and attrs.get("rollgym.run_id") == self.run_id:
                    self.exits[attrs.get("name", "")] = int(attrs.get("exitCode", -1))
        except Exception:  # noqa: BLE001 - the stream ends when the watch is closed
            pass

    def close(self) -> None:
        self._stream.close()
        self._client.close()

    def __enter__(self) -> DeathWatch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def seconds_until_gone(names: set[str], docker_host: str = "default", timeout_s: float = 120.0) -> float:
    """How long until none of `names` is listed on the daemon any more (`timeout_s` when some still are)."""
    return seconds_until_ended(names, docker_host, timeout_s, count_never_started=True)[0]


def seconds_until_ended(
    names: set[str], docker_host: str = "default", timeout_s: float = 120.0, count_never_started: bool = False
) -> tuple[float, set[str]]:
    """How long until none of `names` that ever started is listed any more (`timeout_s` when some still are), and
    the ones left never started (state `created`: an owner killed inside the daemon's create call, before `start`;
    nothing runs in them, so no lease can end them: `prune --run` removes them, envs/sandbox/lease.py)."""
    start = time.monotonic()
    while True:
        rows = [row for row in list_sandboxes(docker_host=docker_host) if row.name in names]
        never = {row.name for row in rows if row.state == "created" and not count_never_started}
        if len(rows) == len(never) or time.monotonic() - start >= timeout_s:
            return min(time.monotonic() - start, timeout_s), never
        time.sleep(0.2)


def containers_of(run_id: str, pid: int | None = None, docker_host: str = "default", state: str = "") -> set[str]:
    """The names of a run's containers (of one owner process, with `pid`; in one `state`, e.g. running)."""
    return {
        row.name
        for row in list_sandboxes(run_id, docker_host=docker_host)
        if (pid is None or row.labels.get("rollgym.pid") == str(pid)) and state in ("", row.state)
    }


def wait_dead(pids: set[int], timeout_s: float = 60.0) -> None:
    """Wait until none of `pids` exists any more (a removed Ray node's workers take a moment to notice)."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"process {pid} still alive after {timeout_s:.0f} s")
