"""The second real Docker daemon of the several-Docker-hosts tests (`.ci/docker-up --second`): its addresses
(a unix socket, and TCP with TLS), starting it (idempotent) and killing it (SIGKILL, as a crashed host); the test
image registry (`.ci/docker-up --registry`); and Podman's API service (`.ci/docker-up --podman`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

DOCKER2 = "unix:///run/rollgym-docker2.sock"
DOCKER2_TLS = "tcp://127.0.0.1:23760"  # the same daemon over TCP with TLS, client certificates in DOCKER2_CERTS
DOCKER2_CERTS = "/var/lib/rollgym-docker2-tls"
PIDFILE = "/run/rollgym-docker2.pid"
DOCKER_UP = Path(__file__).resolve().parents[2] / ".ci" / "docker-up"
DOCKER2_SSH = "ssh://root@127.0.0.1:2222"  # the same daemon behind a real sshd (`.ci/docker-up --ssh`)
SSH_BIN = "/var/lib/rollgym-sshd/bin"  # the system ssh with the test sshd's keys and known_hosts (-F)


#: the test session these helpers belong to (set by the session's controller, inherited by its xdist workers): a
#: helper is stopped at the end only by the session that started that process, never by another session running
#: beside it on the same machine
SESSION_ENV = "ROLLGYM_TEST_HELPERS_SESSION"


def _ledger() -> Path | None:
    session = os.environ.get(SESSION_ENV)
    return Path(f"/tmp/rollgym-test-helpers-{session}") if session else None


def _docker_up(flag: str, timeout: float = 300, env: dict | None = None) -> str:
    """Run `.ci/docker-up FLAG` (idempotent) and note in this session's ledger each helper process it started; what
    it said."""
    before = _pids()
    proc = subprocess.run(["bash", str(DOCKER_UP), flag], capture_output=True, text=True, timeout=timeout, env=env)
    ledger = _ledger()
    if ledger is not None:
        ledger.mkdir(exist_ok=True)
        for name, pid in _pids().items():
            if pid is not None and pid != before.get(name):
                (ledger / name).write_text(str(pid))
    if proc.returncode != 0:
        raise RuntimeError(f".ci/docker-up {flag} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def start_docker2() -> None:
    """Start the second dockerd if it is not running, with rollgym's base image; raise when it cannot start."""
    _docker_up("--second")


def start_docker2_ssh() -> None:
    """Start the second dockerd and the sshd that serves it, if they are not running; raise when they cannot."""
    _docker_up("--ssh")


SSHD_PIDFILE = "/run/rollgym-sshd.pid"
REGISTRY = "127.0.0.1:5000"  # the test registry (`.ci/docker-up --registry`), serving the task folders' images
REGISTRY_PIDFILE = "/run/rollgym-registry.pid"
PODMAN_PIDFILE = "/run/rollgym-podman.pid"  # `podman system service`, when .ci/docker-up --podman started it


def start_registry() -> None:
    """Start the test registry with the task folders' images pushed, if it is not serving; raise when it cannot."""
    _docker_up(
        "--registry", timeout=900, env={**os.environ, "ROLLGYM_BIN": str(Path(sys.executable).parent / "rollgym")}
    )


def start_podman() -> str:
    """Install Podman and serve its API socket with rollgym's images, if it is not serving (idempotent; one xdist
    worker at a time, as both run Podman tests); what `.ci/docker-up --podman` said (it says why when Podman cannot
    run here, and exits 0)."""
    with open("/tmp/rollgym-podman-up.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _docker_up("--podman", timeout=900)


def _alive(pidfile: str) -> int | None:
    """The pid in `pidfile` if that process is alive."""
    try:
        pid = int(Path(pidfile).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


HELPERS = (
    ("sshd", SSHD_PIDFILE),
    ("docker2", PIDFILE),
    ("registry", REGISTRY_PIDFILE),
    ("podman", PODMAN_PIDFILE),
)


def _pids() -> dict[str, int | None]:
    return {name: _alive(pidfile) for name, pidfile in HELPERS}


def stop() -> None:
    """Stop the helpers (the second dockerd, the test sshd and ssh connections kept open to it, the registry) that
    this session started and that still run as it started them: a test session ends what it started, and only that."""
    ledger = _ledger()
    if ledger is None or not ledger.is_dir():
        return
    ours = {f.name: int(f.read_text()) for f in ledger.iterdir()}
    shutil.rmtree(ledger, ignore_errors=True)
    now = _pids()
    if "sshd" in ours and now["sshd"] == ours["sshd"]:
        # ssh's ControlPersist masters (titled "ssh: /run/rollgym-ssh-<hash> [mux]"), and clients using the config
        subprocess.run(["pkill", "-f", "/run/rollgym-ssh-|rollgym-sshd/ssh_config"], capture_output=True)
    for name, pidfile in HELPERS:
        pid = now[name]
        if pid is None or ours.get(name) != pid:
            continue
        os.kill(pid, signal.SIGTERM)
        for _ in range(600):  # dockerd stops its containers and its containerd first
            if _alive(pidfile) != pid:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)


def kill_docker2() -> None:
    """SIGKILL the second dockerd and wait until it is gone (its containers' processes stay: a crashed host)."""
    pid = int(Path(PIDFILE).read_text().strip())
    os.kill(pid, signal.SIGKILL)
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise RuntimeError(f"the second dockerd (pid {pid}) survived SIGKILL")
