"""Data crossing the sandbox boundary: creation settings and exec results (errors: `errors.py`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from rollgym.models import BoundaryModel

# Set in every sandbox so tools never wait on a pager, a prompt, or a progress bar.
QUIET_ENV: dict[str, str] = {
    "PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_PAGER": "cat",
    "LESS": "-R",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PIP_PROGRESS_BAR": "off",
    "PIP_NO_INPUT": "1",
    "TQDM_DISABLE": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
    "PYTHONUNBUFFERED": "1",
    "PYTHONIOENCODING": "utf-8",
    "LC_ALL": "C.UTF-8",
}


class SandboxMount(BoundaryModel):
    """A folder of the Docker host's machine bind-mounted into the sandbox (read-only unless said otherwise): how an
    agent's runtime and its proxy socket reach a container that has no network. The Docker socket never is."""

    source: str  # an absolute path on the machine the Docker daemon runs on
    target: str  # an absolute path in the container
    read_only: bool = True

    @field_validator("source", "target")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or "/../" in f"{value}/":
            raise ValueError(f"{value!r} is not an absolute, normalized path")
        if "docker.sock" in value or value.rstrip("/") in ("", "/var/run", "/run"):
            raise ValueError(f"{value!r}: the Docker socket (or the root) is never mounted into a sandbox")
        return value


class SandboxConfig(BoundaryModel):
    """How to create one sandbox: safe defaults, every field overridable per task."""

    image: str
    network_mode: str = "none"
    mem_limit: str = "2g"
    memswap_limit: str | None = None  # None: same as mem_limit, i.e. no swap
    cpus: float = 1.0
    pids_limit: int = 512
    # Writable-layer budget: enforced by the storage driver where it can (`--storage-opt size=`), else
    # measured while commands run and the container killed over it (`DiskLimitError`). None: no budget.
    disk_limit: str | None = "4g"
    read_only: bool = False
    tmpfs: dict[str, str] = Field(default_factory=dict)  # e.g. {"/tmp": "rw,size=256m"}; /tmp is added when read_only
    user: str | None = None  # e.g. "1000:1000" for a non-root agent
    workdir: str = "/"
    env: dict[str, str] = Field(default_factory=dict)
    mounts: list[SandboxMount] = Field(default_factory=list)  # host folders bind-mounted in (an agent's runtime)
    ttl_s: int = 6 * 3600  # PID 1 exits after ttl_s (keepalive.py): a crashed host cannot leave it running forever
    # The owner's lease (lease.py): the sandbox ends itself once the process that made it has not renewed it for this
    # long (killed by SIGKILL or the OOM killer, its machine lost). None: $ROLLGYM_SANDBOX_LEASE_S, else 60 s;
    # 0: no lease, the TTL only (an owner that will sit stopped in a debugger).
    lease_s: float | None = Field(default=None, ge=0)
    labels: dict[str, str] = Field(default_factory=dict)
    run_id: str | None = None
    task_id: str | None = None
    use_runner: bool = True  # persistent in-container runner for fast exec, with plain exec fallback
    # A command every sandbox of this config needs before use, run once per Docker host and image and forked for the
    # rest (prepared.py): the sandbox's `prepare_result` is its outcome, None for a sandbox started from that state.
    prepare: str | None = None
    default_timeout_s: float = 120.0
    max_output_bytes: int = 50_000  # kept: the first and last halves; the rest is elided and counted
    # The Docker daemon(s): an address (unix:///…sock, tcp://host:2376 with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH,
    # ssh://user@host) or several (a list, or comma-separated), over which sandboxes are placed least-loaded.
    # None: `ROLLGYM_DOCKER_HOSTS` (comma-separated) if set, else the default engine (DOCKER_HOST or the local socket).
    docker_host: str | list[str] | None = None
    max_per_host: int | None = Field(default=None, ge=1)  # live sandboxes per host; at the cap on all: wait for a slot
    # The container runtime this config needs: "docker" or "podman" (runtime.py). With no docker_host, "podman" is the
    # local Podman socket; with one, the daemon there must be that runtime. None: whichever serves docker_host.
    runtime: str | None = None

    @field_validator("lease_s")
    @classmethod
    def _lease(cls, value: float | None) -> float | None:
        from rollgym.envs.sandbox.lease import lease_seconds

        return None if value is None else lease_seconds(value)

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, value: str | None) -> str | None:
        from rollgym.envs.sandbox.runtime import check_name

        return None if value is None else check_name(value)

    @field_validator("disk_limit")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        from rollgym.envs.sandbox.disk import parse_size

        if value is not None:
            parse_size(value)  # a clear error now, not at container creation
        return value


class ExecResult(BaseModel):
    """The outcome of one command; a non-zero exit is a result, never an exception."""

    exit_code: int | None  # None when the command was killed by a timeout
    output: str  # stdout and stderr interleaved, decoded with replacement, ANSI stripped, capped
    timed_out: bool = False
    truncated: bool = False
    elided_bytes: int = 0
    duration_s: float = 0.0
    via: Literal["runner", "exec"] = "exec"

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out
