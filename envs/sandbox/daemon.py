"""Docker daemons: one cached client per host address, engine start-up, and retries of transient daemon errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import docker
import docker.constants
import docker.errors
import docker.utils
import requests.exceptions

from rollgym.envs.sandbox.errors import SandboxDeadError, SandboxError
from rollgym.envs.sandbox.runtime import PODMAN, check_address, default_base_url, podman_address

T = TypeVar("T")
DEFAULT_HOST = "default"  # the default engine: `DOCKER_HOST`, else the Docker CLI's context, else the local socket
HOSTS_ENV = "ROLLGYM_DOCKER_HOSTS"
_CLIENTS: dict[tuple[str, float], docker.DockerClient] = {}
_CLIENT_LOCK = threading.Lock()
_HOST_LOCKS: dict[tuple[str, float], threading.Lock] = {}


def configured_hosts(docker_host: str | list[str] | None = None, runtime: str | None = None) -> list[str]:
    """The daemon addresses to use: `docker_host` (one, a list, or comma-separated), else the local Podman when
    `runtime` is "podman", else `ROLLGYM_DOCKER_HOSTS`, else the default engine. `podman` stands for the local Podman
    socket; an address of another runtime (`k8s://...`) is refused by name. Order kept, duplicates dropped."""
    given = docker_host or (PODMAN if runtime == "podman" else os.environ.get(HOSTS_ENV, ""))
    parts = given.split(",") if isinstance(given, str) else list(given)
    named = (check_address(p.strip()) for p in parts if p and p.strip())
    hosts = list(dict.fromkeys(podman_address() if p == PODMAN else p for p in named))
    return hosts or [DEFAULT_HOST]


def _client_kwargs(host: str) -> Mapping[str, Any]:
    """Connection settings for one address: TLS from `DOCKER_TLS_VERIFY`/`DOCKER_CERT_PATH` for tcp://,
    the system `ssh` client for ssh:// (so ~/.ssh/config, agents and known_hosts apply)."""
    if host.startswith(("tcp://", "https://")):
        return docker.utils.kwargs_from_env(environment={**os.environ, "DOCKER_HOST": host})
    if host.startswith("ssh://"):
        return {"base_url": host, "use_ssh_client": True}
    return {"base_url": host}


def _ssh_command(host: str) -> str:
    """The ssh command the Docker SDK runs for an ssh:// address, for error messages."""
    url = urllib.parse.urlparse(host)
    target = f"{url.username}@{url.hostname}" if url.username else str(url.hostname)
    return f"ssh -p {url.port} {target}" if url.port else f"ssh {target}"


def client_for(host: str | None = None, timeout: float = 300) -> docker.DockerClient:
    """The cached client of one daemon (`None` or "default": the default engine); thread-safe, with a larger
    connection pool for concurrent sandboxes. Creating it asks the daemon its API version."""
    host = host or DEFAULT_HOST
    with _CLIENT_LOCK:  # one lock per host while its client is made: a host that hangs holds up no other
        client = _CLIENTS.get((host, timeout))
        lock = _HOST_LOCKS.setdefault((host, timeout), threading.Lock())
    if client is not None:
        return client
    with lock:
        client = _CLIENTS.get((host, timeout))
        if client is None:
            try:
                if host == DEFAULT_HOST and default_base_url() is not None:  # no Docker here, a Podman socket
                    client = docker.DockerClient(base_url=default_base_url(), timeout=timeout, max_pool_size=64)  # pyright: ignore[reportArgumentType]  # typeshed says int; the SDK hands it to requests, which takes a float
                elif host == DEFAULT_HOST:
                    client = docker.from_env(timeout=timeout, max_pool_size=64)  # pyright: ignore[reportArgumentType]  # typeshed says int; the SDK hands it to requests, which takes a float (PROBE_TIMEOUT_S is 5.0)
                else:
                    kwargs = _client_kwargs(host)
                    if kwargs.get("tls"):
                        # requests would let REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE replace the daemon's CA (trust_env):
                        # off before the first request, then the API version asked as `version="auto"` does.
                        client = docker.DockerClient(
                            timeout=timeout,
                            max_pool_size=64,
                            version=docker.constants.MINIMUM_DOCKER_API_VERSION,
                            **kwargs,
                        )
                        client.api.trust_env = False
                        client.api._version = client.api._retrieve_server_version()  # pyright: ignore[reportAttributeAccessIssue]  # the SDK's private version slot, set as its own version="auto" does; typeshed omits both
                    else:
                        client = docker.DockerClient(timeout=timeout, max_pool_size=64, **kwargs)
            except docker.errors.DockerException as exc:  # no daemon: an infrastructure failure, said as one
                hint = ""
                if host.startswith("ssh://"):  # ssh's own words (a refused key) went to stderr, not into exc
                    hint = (
                        f" (over ssh: `{_ssh_command(host)} docker system dial-stdio` must work without a "
                        "prompt: the key, known_hosts, and the docker CLI on that host)"
                    )
                raise SandboxError(f"cannot reach the Docker engine at {host}: {exc}{hint}") from exc
            with _CLIENT_LOCK:
                _CLIENTS[(host, timeout)] = client
        return client


def host_of(client: docker.DockerClient) -> str:
    """The address a client was made for by `client_for`, else its base URL (a client made elsewhere)."""
    with _CLIENT_LOCK:
        return next((host for (host, _), c in _CLIENTS.items() if c is client), client.api.base_url)


def docker_client() -> docker.DockerClient:
    """The default engine's client (one Docker host; sandboxes use their own host's client: `client_for`)."""
    return client_for(DEFAULT_HOST)


def engine_available() -> tuple[bool, str]:
    """Whether a Docker engine answers, and if not, why."""
    try:
        docker.from_env(timeout=10).ping()
        return True, "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means "not available", with its reason
        return False, f"{type(exc).__name__}: {exc}"


def ensure_engine(timeout_s: float = 90.0, log_path: str = "/tmp/rollgym-dockerd.log") -> tuple[bool, str]:
    """Start `dockerd` in the background when no engine answers (root only); wait until it does."""
    ok, why = engine_available()
    if ok:
        return ok, why
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        return False, f"no Docker engine ({why}) and cannot start one (need root and dockerd; run .ci/docker-up)"
    if subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode != 0:
        with open(log_path, "ab") as log:
            subprocess.Popen(["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ok, why = engine_available()
        if ok:
            return ok, why
        time.sleep(0.5)
    return False, f"dockerd did not become ready within {timeout_s:.0f}s (log: {log_path}): {why}"


def is_not_running_error(exc: BaseException) -> bool:
    """A daemon error meaning the container is stopped or gone (not worth retrying)."""
    if isinstance(exc, docker.errors.ImageNotFound):
        return False
    if isinstance(exc, docker.errors.NotFound):
        return True
    text = str(exc).lower()
    return isinstance(exc, docker.errors.APIError) and (
        "is not running" in text or "is paused" in text or "dead or marked for removal" in text
    )


def is_transient(exc: BaseException) -> bool:
    """Daemon errors worth retrying: 409 conflicts (except stopped containers), 5xx, dropped connections."""
    if is_not_running_error(exc):
        return False
    if isinstance(exc, docker.errors.APIError):
        code = exc.status_code or 0
        return code == 409 or code >= 500
    return isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout))


def with_retries(fn: Callable[[], T], what: str, attempts: int = 4, base_delay_s: float = 0.25) -> T:
    """Call `fn`, retrying transient daemon errors with exponential backoff; raise `SandboxError` at the end."""
    for attempt in range(attempts):
        try:
            return fn()
        except Exception as exc:
            if is_not_running_error(exc):
                raise SandboxDeadError(f"{what}: the container is not running ({exc})") from exc
            if not is_transient(exc) or attempt == attempts - 1:
                if isinstance(exc, (docker.errors.DockerException, requests.exceptions.RequestException)):
                    raise SandboxError(f"{what}: Docker daemon error: {exc}") from exc
                raise
            time.sleep(base_delay_s * (2**attempt))
    raise AssertionError("unreachable")
