"""Container runtimes: Docker and Podman, both through the Docker Engine API (Podman's compatible socket, served by
`podman system service`), told apart by what the daemon says of itself; any other runtime is refused by name.

An address picks the daemon (`SandboxConfig.docker_host`, `--docker-host`): `podman` is the local Podman socket
(rootful `/run/podman/podman.sock`, else the user's `$XDG_RUNTIME_DIR/podman/podman.sock`). `SandboxConfig.runtime`
names the runtime a config needs: with no address it picks the local one, with an address it is checked against it.
With neither, the default engine is `DOCKER_HOST`, else Docker's socket, else (a machine with no Docker daemon)
Podman's. Rootless Podman on cgroup v1 cannot apply memory, CPU or pid limits (Podman ignores them with a warning):
such a daemon is refused, since a sandbox without its limits would let a fork bomb or a memory hog reach the host."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from typing import Literal

import docker
import docker.errors
import requests.exceptions
from pydantic import BaseModel

from rollgym.envs.sandbox.errors import SandboxError, UnsupportedRuntimeError

KNOWN = ("docker", "podman")
Runtime = Literal["docker", "podman"]
PODMAN = "podman"  # the address alias of the local Podman socket
DOCKER_SOCKET = "/var/run/docker.sock"
ROOTFUL_PODMAN_SOCKET = "/run/podman/podman.sock"
_OTHERS = {
    "apptainer": "Apptainer",
    "singularity": "Apptainer (Singularity)",
    "kubernetes": "Kubernetes",
    "k8s": "Kubernetes",
    "containerd": "containerd",
    "nerdctl": "containerd",
    "lxc": "LXC",
    "lxd": "LXD",
}
_INFO: dict[int, RuntimeInfo] = {}
_INFO_LOCK = threading.Lock()


class RuntimeInfo(BaseModel):
    """What a daemon said of itself: which runtime, its version, and whether it can limit a sandbox."""

    name: Runtime
    version: str
    rootless: bool = False
    cgroup_version: str = ""


def unsupported(name: str) -> UnsupportedRuntimeError:
    """The error for a runtime rollgym does not run sandboxes on (yet), naming the ones it does."""
    kind = _OTHERS.get(name.lower(), repr(name))
    return UnsupportedRuntimeError(
        f"{kind} is not a container runtime rollgym supports yet: it runs sandboxes on {' and '.join(KNOWN)} "
        "(Podman through its Docker-compatible socket, `podman system service`; see docs/environments.md)"
    )


def check_name(name: str) -> Runtime:
    """`name` as a runtime rollgym knows, else `UnsupportedRuntimeError` naming the known ones."""
    lowered = name.strip().lower()
    if lowered == "docker":
        return "docker"
    if lowered == "podman":
        return "podman"
    raise unsupported(lowered)


def check_address(address: str) -> str:
    """`address` unless its scheme names another runtime (`k8s://`, `kubernetes://`, `apptainer://` ...)."""
    scheme, sep, _ = address.partition("://")
    if sep and scheme.lower() in _OTHERS:
        raise unsupported(scheme)
    if not sep and address.strip().lower() in _OTHERS:
        raise unsupported(address.strip())
    return address


def _podman_sockets() -> list[str]:
    """Where a local Podman serves its API: the rootful socket first for root, the user's first otherwise."""
    user = f"{os.environ.get('XDG_RUNTIME_DIR') or f'/run/user/{os.geteuid()}'}/podman/podman.sock"
    return [ROOTFUL_PODMAN_SOCKET, user] if os.geteuid() == 0 else [user, ROOTFUL_PODMAN_SOCKET]


def podman_socket() -> str | None:
    """The path of the local Podman API socket that exists, else None."""
    return next((path for path in _podman_sockets() if os.path.exists(path)), None)


def podman_address() -> str:
    """The `unix://` address of the local Podman socket (where it would be served, when none exists yet)."""
    return f"unix://{podman_socket() or _podman_sockets()[0]}"


def default_base_url() -> str | None:
    """The default engine's address when it is Podman's: no `DOCKER_HOST`, no Docker socket, a Podman socket."""
    if os.environ.get("DOCKER_HOST") or os.path.exists(DOCKER_SOCKET):
        return None
    path = podman_socket()
    return f"unix://{path}" if path else None


def info_of(client: docker.DockerClient) -> RuntimeInfo:
    """Which runtime serves `client` (asked once per client); `SandboxError` when it cannot limit sandboxes."""
    key = id(client.api)
    with _INFO_LOCK:
        known = _INFO.get(key)
    if known is not None:
        return known
    try:
        version = client.version()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxError(f"cannot ask the daemon at {client.api.base_url} what it is: {exc}") from exc
    names = [c.get("Name", "") for c in version.get("Components") or []]
    if any("podman" in n.lower() for n in names):
        info = _podman_info(client, version.get("Version", ""))
    else:
        info = RuntimeInfo(name="docker", version=version.get("Version", ""))
    with _INFO_LOCK:
        _INFO[key] = info
    return info


def _podman_info(client: docker.DockerClient, version: str) -> RuntimeInfo:
    """Podman's own report (its libpod API): rootless or not, and the cgroup version."""
    try:
        host = client.api._result(client.api._get(client.api._url("/libpod/info")), json=True).get("host", {})  # pyright: ignore[reportAttributeAccessIssue]  # docker-py's request helpers, private and untyped; the libpod endpoint has no public call
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxError(f"cannot ask Podman at {client.api.base_url} for its settings: {exc}") from exc
    info = RuntimeInfo(
        name="podman",
        version=version,
        rootless=bool((host.get("security") or {}).get("rootless")),
        cgroup_version=str(host.get("cgroupVersion", "")),
    )
    if info.rootless and info.cgroup_version == "v1":
        raise SandboxError(
            f"Podman at {client.api.base_url} runs rootless on cgroup v1, where it cannot apply memory, CPU or pid "
            "limits (it ignores them): rollgym will not start a sandbox without its limits. Run Podman rootful "
            "(`.ci/docker-up --podman`), or rootless on a cgroup v2 host with the controllers delegated"
        )
    return info


def ensure_podman(timeout_s: float = 60.0, log_path: str = "/tmp/rollgym-podman.log") -> tuple[bool, str]:
    """Serve the local Podman's API socket (`podman system service`) when it does not answer; wait until it does.
    (False, why) when Podman is not installed or its service does not start."""
    address = podman_address()
    if _answers(address):
        return True, address
    if shutil.which("podman") is None:
        return False, "podman is not installed (Debian: apt-get install podman; or run .ci/docker-up --podman)"
    path = address.removeprefix("unix://")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(log_path, "ab") as log:
        subprocess.Popen(
            ["podman", "system", "service", "--time=0", address],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=os.path.dirname(path),  # conmon writes an `oom` file into its working directory: not the user's folder
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _answers(address):
            return True, address
        time.sleep(0.25)
    return False, f"`podman system service` did not answer on {address} within {timeout_s:.0f} s (log: {log_path})"


def _answers(address: str) -> bool:
    try:
        client = docker.DockerClient(base_url=address, timeout=5)
    except Exception:  # noqa: BLE001 - any failure: not serving
        return False
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - any failure: not serving
        return False
    finally:
        client.close()
