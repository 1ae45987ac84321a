"""The second real Docker daemon of the several-Docker-hosts tests (`.ci/docker-up --second`): its addresses
(a unix socket, and TCP with TLS), starting it (idempotent) and killing it (SIGKILL, as a crashed host); and the test
image registry (`.ci/docker-up --registry`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DOCKER2 = "unix:///run/rollgym-docker2.sock"
DOCKER2_TLS = "tcp://127.0.0.1:23760"  # the same daemon over TCP with TLS, client certificates in DOCKER2_CERTS
DOCKER2_CERTS = "/var/lib/rollgym-docker2-tls"
PIDFILE = "/run/rollgym-docker2.pid"
DOCKER_UP = Path(__file__).resolve().parents[1] / ".ci" / "docker-up"
DOCKER2_SSH = "ssh://root@127.0.0.1:2222"  # the same daemon behind a real sshd (`.ci/docker-up --ssh`)
SSH_BIN = "/var/lib/rollgym-sshd/bin"  # the system ssh with the test sshd's keys and known_hosts (-F)


def start_docker2() -> None:
    """Start the second dockerd if it is not running, with rollgym's base image; raise when it cannot start."""
    proc = subprocess.run(["bash", str(DOCKER_UP), "--second"], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f".ci/docker-up --second failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


def start_docker2_ssh() -> None:
    """Start the second dockerd and the sshd that serves it, if they are not running; raise when they cannot."""
    proc = subprocess.run(["bash", str(DOCKER_UP), "--ssh"], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f".ci/docker-up --ssh failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


SSHD_PIDFILE = "/run/rollgym-sshd.pid"
REGISTRY = "127.0.0.1:5000"  # the test registry (`.ci/docker-up --registry`), serving the task folders' images
REGISTRY_PIDFILE = "/run/rollgym-registry.pid"


def start_registry() -> None:
    """Start the test registry with the task folders' images pushed, if it is not serving; raise when it cannot."""
    env = {**os.environ, "ROLLGYM_BIN": str(Path(sys.executable).parent / "rollgym")}
    proc = subprocess.run(["bash", str(DOCKER_UP), "--registry"], capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f".ci/docker-up --registry failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


def _alive(pidfile: str) -> int | None:
    """The pid in `pidfile` if that process is alive."""
    try:
        pid = int(Path(pidfile).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def running() -> set[str]:
    """Which of the second dockerd and the test sshd run now."""
    return {
        name
        for name, pidfile in (("docker2", PIDFILE), ("sshd", SSHD_PIDFILE), ("registry", REGISTRY_PIDFILE))
        if _alive(pidfile)
    }


def stop(keep: set[str]) -> None:
    """Stop the second dockerd and the test sshd (and ssh connections kept open to it), except those in `keep`:
    a test session ends what it started."""
    if "sshd" not in keep:
        # ssh's ControlPersist masters (titled "ssh: /run/rollgym-ssh-<hash> [mux]"), and clients using the config
        subprocess.run(["pkill", "-f", "/run/rollgym-ssh-|rollgym-sshd/ssh_config"], capture_output=True)
    for name, pidfile in (("sshd", SSHD_PIDFILE), ("docker2", PIDFILE), ("registry", REGISTRY_PIDFILE)):
        pid = _alive(pidfile)
        if name in keep or pid is None:
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
