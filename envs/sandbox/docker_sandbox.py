"""`DockerSandbox`: one locked-down container with a fast exec path, real timeouts and tar-based file I/O."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import posixpath
import re
import shlex
import threading
import time
import uuid
from collections.abc import Callable
from typing import Literal

import docker
import docker.errors
import docker.types
import requests.exceptions
import urllib3.exceptions

from rollgym.envs.sandbox import hosts, lifecycle, prepared, record
from rollgym.envs.sandbox.archives import dir_archive, file_archive, first_file
from rollgym.envs.sandbox.attached import AttachedProcess
from rollgym.envs.sandbox.daemon import (
    DEFAULT_HOST,
    client_for,
    configured_hosts,
    host_of,
    is_not_running_error,
    with_retries,
)
from rollgym.envs.sandbox.disk import WATCH, parse_size, storage_size_refused, storage_size_supported
from rollgym.envs.sandbox.errors import (
    DirectoryInSandboxError,
    DiskLimitError,
    FileNotInSandboxError,
    HostUnavailableError,
    ImageError,
    SandboxDeadError,
    SandboxError,
)
from rollgym.envs.sandbox.host_images import ensure_image_on
from rollgym.envs.sandbox.keepalive import keepalive_command
from rollgym.envs.sandbox.lease import KEEPER, LEASE_CALL_TIMEOUT_S, lease_seconds
from rollgym.envs.sandbox.models import QUIET_ENV, ExecResult, SandboxConfig
from rollgym.envs.sandbox.plain_exec import plain_exec
from rollgym.envs.sandbox.runner_client import RunnerClient, RunnerError, RunnerLostError
from rollgym.envs.sandbox.runtime import RuntimeInfo, info_of
from rollgym.errors import UsageError


def _slug(text: str | None) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text or "")[:40].strip("-.") or "sb"


class DockerSandbox:
    """A container created with safe defaults (no network, limits, no capabilities, init, TTL'd PID 1), on
    one of the configured Docker hosts (`config.docker_host`; placement: hosts.py). Every operation on it
    uses that host's client (`self.client`); `self.host` is its address."""

    def __init__(
        self, config: SandboxConfig, client: docker.DockerClient | None = None, *, _reserved_host: str | None = None
    ) -> None:
        """`client`: use this daemon, outside placement; `_reserved_host`: a slot already reserved there
        (`start_sandbox`), which this sandbox now owns."""
        self.config = config
        self.name = f"rollgym-{_slug(config.task_id)}-{uuid.uuid4().hex[:10]}"
        self._closed = False
        self._close_lock = threading.Lock()
        self._runner: RunnerClient | None = None
        self._runner_lock = threading.Lock()
        self._runner_restarts = 0
        self.runner_error: str | None = None
        self.disk_budget: int | None = None  # bytes, when measured here (not enforced by the storage driver)
        self.disk_used: int | None = None  # set when the writable layer went over the budget
        self._slot: str | None = None  # the host whose placement slot this sandbox holds until closed
        self.prepare_result: ExecResult | None = None  # `config.prepare` run here (None: forked, or nothing to run)
        self.image = config.image  # what the container started from (a prepared image when forked)
        self.lease_s = lease_seconds(config.lease_s)  # 0: no lease (lease.py)
        self.runtime: RuntimeInfo | None = None  # which runtime serves it (runtime.py), once asked
        self._record = record.current()  # where its start and end are reported (record.py), if anywhere
        self.labels: dict[str, str] = {}  # the container's labels (lifecycle.py), once created
        self._placed = client is None  # on a configured host (`self.host` an address client_for knows)
        prepare_lock: threading.Lock | None = None
        self._prepare_key: str | None = None
        self._prepare_alone = False  # runs `config.prepare` without saving it (quicker than a commit)
        with lifecycle.busy():  # creating: `lifecycle.settle` waits for it, even if the caller has left
            if client is not None:
                self.client, self.host = client, host_of(client)
                prepare_lock = self._fork_or_lock()
                try:
                    self.container = self._create()
                except BaseException:
                    if prepare_lock is not None:
                        prepare_lock.release()
                    raise
            else:
                candidates = configured_hosts(config.docker_host, config.runtime)
                self.host = _reserved_host or hosts.reserve(candidates, config.max_per_host)
                self._slot = self.host
                try:
                    self.client = client_for(self.host)
                    ensure_image_on(config.image, self.host, [*candidates, DEFAULT_HOST])
                    prepare_lock = self._fork_or_lock()
                    self.container = self._create()
                except BaseException as exc:
                    if prepare_lock is not None:
                        prepare_lock.release()
                    hosts.release(self.host)
                    self._slot = None
                    if isinstance(exc, Exception) and hosts.is_unreachable(exc):
                        hosts.mark_down(self.host, f"{type(exc).__name__}: {exc}")
                        raise HostUnavailableError(
                            f"Docker host {self.host} does not answer (out of rotation for "
                            f"{hosts.COOLDOWN_S:.0f}s): {exc}"
                        ) from exc
                    raise
            lifecycle.register(self)
            if self.lease_s:
                KEEPER.hold(self)
        if config.use_runner:
            self._start_runner()
        if prepare_lock is not None or self._prepare_alone:
            self._prepare(prepare_lock)

    # -- prepared state (prepared.py) -------------------------------------------------------------
    def _fork_or_lock(self) -> threading.Lock | None:
        """Start from this host's prepared image of the config when there is one; else hold the lock under which
        this sandbox prepares it (None: nothing to prepare, forked, or a preparation too quick to be worth saving,
        which each sandbox then runs itself: `_prepare_alone`)."""
        if not self.config.prepare:
            return None
        key = self._prepare_key = prepared.key_of(self.client, self.config)
        if not prepared.worth_saving(self.host, key):
            self._prepare_alone = True
            return None
        lock = prepared.lock_for(self.host, key)
        lock.acquire()
        image = prepared.find(self.client, key)
        if image is not None or not prepared.worth_saving(self.host, key):
            lock.release()
            if image is not None:
                self.image = image
            else:
                self._prepare_alone = True
            return None
        return lock

    def _prepare(self, lock: threading.Lock | None) -> None:
        """Run `config.prepare` here; holding `lock`, save the container as the host's prepared image when it
        succeeded and took longer than saving it would (else note that it is not worth saving)."""
        try:
            self.prepare_result = self.exec(self.config.prepare or "", timeout=max(self.config.default_timeout_s, 600))
            if lock is not None and self.prepare_result.exit_code == 0 and self._prepare_key:
                if self.prepare_result.duration_s < prepared.WORTH_S:
                    prepared.not_worth_saving(self.host, self._prepare_key)
                else:
                    with contextlib.suppress(docker.errors.APIError):  # the next sandbox prepares again
                        prepared.commit(self.container, self._prepare_key)
        except BaseException:
            self.close()
            raise
        finally:
            if lock is not None:
                lock.release()

    # -- creation --------------------------------------------------------------------------------
    def _create(self):
        cfg = self.config
        self.runtime = info_of(self.client)
        if cfg.runtime is not None and self.runtime.name != cfg.runtime:
            raise UsageError(
                f"the sandbox config asks for {cfg.runtime}, but the daemon at {self.host} is {self.runtime.name}"
            )
        tmpfs = dict(cfg.tmpfs)
        if cfg.read_only:
            tmpfs.setdefault("/tmp", "rw,exec,size=512m,mode=1777")
        labels = {
            **cfg.labels,
            **lifecycle.base_labels(cfg.run_id, cfg.task_id, cfg.ttl_s, self.lease_s),
            lifecycle.HOST_LABEL: self.host,
        }
        self.labels = labels
        kwargs = {
            "command": keepalive_command(cfg.ttl_s, self.lease_s),
            "name": self.name,
            "detach": True,
            "init": False,
            "labels": labels,
            "network_mode": cfg.network_mode,
            "mem_limit": cfg.mem_limit,
            "memswap_limit": cfg.memswap_limit or cfg.mem_limit,
            "nano_cpus": int(cfg.cpus * 1e9),
            "pids_limit": cfg.pids_limit,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "read_only": cfg.read_only,
            "tmpfs": tmpfs or None,
            "user": cfg.user or "",
            "working_dir": cfg.workdir,
            "environment": {**QUIET_ENV, **cfg.env},
            "auto_remove": True,
            "stdin_open": False,
            "tty": False,
        }
        if cfg.mounts:
            kwargs["mounts"] = [
                docker.types.Mount(m.target, m.source, type="bind", read_only=m.read_only) for m in cfg.mounts
            ]
        if cfg.disk_limit and storage_size_supported(self.client):
            kwargs["storage_opt"] = {"size": cfg.disk_limit}
        # On record by name before the daemon has it: an owner killed inside the create call leaves it accounted for.
        self._report("creating")
        try:
            container = self._create_container(kwargs)
        except BaseException:
            self._report("ended", "not created")
            raise
        self.container = container
        self._report("started")
        try:
            with_retries(container.start, f"start {self.name}")
        except BaseException:
            try:
                container.remove(force=True)
                self._report("ended", "not started")
            except Exception:  # noqa: BLE001 - the start's own error is the one raised
                pass
            raise
        if cfg.disk_limit and "storage_opt" not in kwargs:
            self.disk_budget = parse_size(cfg.disk_limit)
        return container

    def _create_container(self, kwargs: dict):
        """The daemon's create call, without a size option it refuses; image errors said as such."""
        cfg = self.config
        try:
            try:
                container = with_retries(
                    lambda: self.client.containers.create(self.image, **kwargs), f"create {self.name}"
                )
            except (docker.errors.APIError, SandboxError) as exc:
                if "storage_opt" not in kwargs or "storage" not in str(exc).lower():
                    raise
                storage_size_refused(self.client)  # e.g. xfs without pquota: measure instead
                del kwargs["storage_opt"]
                container = with_retries(
                    lambda: self.client.containers.create(self.image, **kwargs), f"create {self.name}"
                )
        except docker.errors.ImageNotFound as exc:
            raise ImageError(
                f"image {cfg.image!r} not found locally (build it, e.g. `rollgym image bootstrap`, or pull it)"
            ) from exc
        except SandboxError as exc:
            if "No such image" in str(exc):
                raise ImageError(
                    f"image {cfg.image!r} not found locally (build it, e.g. `rollgym image bootstrap`)"
                ) from exc
            raise
        return container

    def _start_runner(self) -> None:
        try:
            runner = RunnerClient(self.client.api, self._container_id, self.config.user)
            runner.ping()
            self._runner = runner
        except Exception as exc:  # noqa: BLE001 - any failure means: use plain exec
            self.runner_error = f"{type(exc).__name__}: {exc}"
            self._runner = None

    @property
    def _container_id(self) -> str:
        container_id = self.container.id
        assert container_id is not None  # docker-py types Model.id as optional; a created container has its id
        return container_id

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def uses_runner(self) -> bool:
        return self._runner is not None and self._runner.alive

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxDeadError(f"sandbox {self.name} is closed")

    def status(self) -> str:
        """The container's state as the daemon reports it ('running', 'exited (OOMKilled)', 'gone')."""
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return "gone"
        except docker.errors.APIError as exc:
            return f"unknown ({exc})"
        except requests.exceptions.RequestException as exc:  # the daemon stopped answering
            hosts.mark_down(self.host, f"{type(exc).__name__}: {exc}")
            return f"unknown (Docker host {self.host} does not answer)"
        state = self.container.attrs.get("State", {})
        return state.get("Status", "unknown") + (" (OOMKilled)" if state.get("OOMKilled") else "")

    def _dead_error(self, what: str, exc: BaseException | None = None) -> SandboxDeadError:
        if self.disk_used is not None:
            return self._disk_error(self.disk_used)
        return SandboxDeadError(
            f"{what}: sandbox container {self.name} is no longer running (status: {self.status()})"
            + (f": {exc}" if exc else "")
        )

    def _raise_if_dead(self, what: str, exc: BaseException) -> None:
        """`SandboxDeadError` when a request failed because the container (or its host) is no longer running."""
        if not self.status().startswith("running"):
            raise self._dead_error(what, exc) from exc

    def _disk_error(self, used: int) -> DiskLimitError:
        return DiskLimitError(
            f"the sandbox's commands wrote {used / 2**30:.2f} GiB, over its disk budget of "
            f"{self.config.disk_limit}; the container was stopped"
        )

    # -- lease (lease.py) -------------------------------------------------------------------------
    def renew_lease(self) -> bool:
        """One heartbeat over the runner's socket (no daemon call); False without a live runner."""
        runner = self._runner
        return not self._closed and runner is not None and runner.renew()

    def signal_lease(self) -> None:
        """One heartbeat through the daemon: SIGUSR1 to PID 1 from outside (a container gone or stopped: nothing).
        A daemon that takes over `LEASE_CALL_TIMEOUT_S` is not waited for: the next heartbeat tries again."""
        if self._closed:
            return
        with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException, SandboxError):
            api = client_for(self.host, timeout=LEASE_CALL_TIMEOUT_S).api if self._placed else self.client.api
            api.kill(self._container_id, "SIGUSR1")

    def _report(self, event: Literal["creating", "started", "ended"], how: str = "") -> None:
        """Tell the record this sandbox was created under that it is being created, started or ended (record.py)."""
        if self._record is None:
            return
        labels = self.labels
        with contextlib.suppress(Exception):  # a record that cannot be written never fails a sandbox
            self._record(
                record.SandboxEvent(
                    event=event,
                    name=self.name,
                    id=(self.container.id or "") if hasattr(self, "container") else "",
                    host=self.host,
                    at=time.time(),
                    run_id=labels.get("rollgym.run_id", ""),
                    task_id=labels.get("rollgym.task_id", ""),
                    owner=lifecycle.owner_of(labels),
                    runtime=self.runtime.name if self.runtime else "",
                    lease_s=self.lease_s,
                    how=how,
                )
            )

    # -- exec ------------------------------------------------------------------------------------
    def exec(
        self,
        cmd: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        max_output: int | None = None,
    ) -> ExecResult:
        """Run `cmd` with `/bin/sh -c`; on timeout its whole process group and session are SIGKILLed. With a
        measured disk budget the writable layer is watched meanwhile: over it, `DiskLimitError`."""
        if self.disk_used is not None:
            raise self._disk_error(self.disk_used)
        if self.disk_budget is None:
            return self._exec(cmd, timeout, cwd, env, stdin, max_output)
        with WATCH.watching(self):
            result = self._exec(cmd, timeout, cwd, env, stdin, max_output)
        if self.disk_used is not None:
            raise self._disk_error(self.disk_used)
        return result

    def _exec(
        self,
        cmd: str,
        timeout: float | None,
        cwd: str | None,
        env: dict[str, str] | None,
        stdin: bytes | None,
        max_output: int | None,
    ) -> ExecResult:
        self._check_open()
        timeout = float(timeout or self.config.default_timeout_s)
        cwd = cwd or self.config.workdir
        max_output = max_output or self.config.max_output_bytes
        if self.config.use_runner and self._runner is None and self._runner_restarts < 3 and self.runner_error:
            with self._runner_lock:  # the runner died earlier (e.g. killed by the OOM killer): start a new one
                if self._runner is None:
                    self._runner_restarts += 1
                    self._start_runner()
        runner = self._runner
        if runner is not None and runner.alive:
            try:
                return runner.run(cmd, timeout, cwd, env, max_output, stdin or b"")
            except RunnerError as exc:
                if self._closed:
                    raise SandboxDeadError(f"sandbox {self.name} was closed") from exc
                self._raise_if_dead("exec", exc)
                self.runner_error = str(exc)
                with self._runner_lock:
                    if self._runner is runner:
                        runner.close()
                        self._runner = None
                if isinstance(exc, RunnerLostError):  # never run a command twice: report, do not retry
                    return ExecResult(
                        exit_code=None,
                        output=f"[rollgym] lost track of this command: the sandbox's "
                        f"command runner stopped ({exc}); it may or may not have completed",
                        via="runner",
                        duration_s=0.0,
                    )
                # not sent yet: fall through to plain exec
        if stdin:
            raise SandboxError(
                "passing stdin needs the persistent runner, which is not available in this sandbox"
                f" ({self.runner_error})"
            )
        return self._exec_plain(cmd, timeout, cwd, env, max_output)

    def _exec_plain(
        self, cmd: str, timeout: float, cwd: str, env: dict[str, str] | None, max_output: int
    ) -> ExecResult:
        try:
            res = plain_exec(
                self.client.api, self._container_id, self.config.user or "", cmd, timeout, cwd, env, max_output
            )
        except SandboxDeadError as exc:
            raise self._dead_error("exec", exc) from exc
        except SandboxError as exc:  # the daemon failed the request: a dead container (or host) says so
            self._raise_if_dead("exec", exc)
            raise
        if (not res.timed_out and res.exit_code is None) or (
            res.exit_code == 137 and not self.status().startswith("running")
        ):
            raise self._dead_error("exec")
        return res

    def attach(
        self,
        command: list[str],
        on_stdout: Callable[[bytes | None], None],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> AttachedProcess:
        """Start `command` inside the sandbox with its stdin and stdout attached (a stdio protocol: an MCP server),
        as the sandbox's user; its stdout goes to `on_stdout` (None when it ends)."""
        self._check_open()
        return AttachedProcess(
            self.client.api,
            self._container_id,
            command,
            on_stdout,
            user=self.config.user,
            env={**QUIET_ENV, **self.config.env, **(env or {})},
            workdir=cwd or self.config.workdir,
        )

    async def aexec(
        self,
        cmd: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        max_output: int | None = None,
    ) -> ExecResult:
        """`exec` in a worker thread, so many sandboxes and tool calls run concurrently."""
        return await asyncio.to_thread(self.exec, cmd, timeout, cwd, env, stdin, max_output)

    # -- files -----------------------------------------------------------------------------------
    def _under_tmpfs(self, path: str) -> bool:
        mounts = set(self.config.tmpfs) | ({"/tmp"} if self.config.read_only else set())
        return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)

    def _mkdir(self, path: str) -> None:
        res = self.exec(f"mkdir -p {shlex.quote(path)}", timeout=30)
        if res.exit_code != 0:
            raise SandboxError(f"cannot create directory {path}: {res.output.strip()}")

    def _owner(self) -> tuple[int, int]:
        user = self.config.user or "0:0"
        parts = user.split(":")
        try:
            return int(parts[0]), int(parts[1] if len(parts) > 1 else parts[0])
        except ValueError:
            return 0, 0

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write a file (parents created first), binary-safe, through a tar archive."""
        self._check_open()
        if isinstance(data, str):
            data = data.encode()
        path = posixpath.normpath(path if path.startswith("/") else posixpath.join(self.config.workdir, path))
        parent, base = posixpath.split(path)
        self._mkdir(parent)
        if self._under_tmpfs(path) or self.config.read_only:
            res = self.exec(f"cat > {shlex.quote(path)} && chmod {mode:o} {shlex.quote(path)}", timeout=60, stdin=data)
            if res.exit_code != 0:
                raise SandboxError(f"cannot write {path}: {res.output.strip()}")
            return
        uid, gid = self._owner()
        self._put_archive(parent, file_archive(base, data, mode, uid, gid), f"write {path}")

    def _put_archive(self, dest: str, payload: bytes, what: str) -> None:
        try:
            ok = with_retries(lambda: self.container.put_archive(dest, payload), what)
        except SandboxDeadError as exc:
            raise self._dead_error(what, exc) from exc
        if not ok:
            raise SandboxError(f"{what}: the daemon refused the archive")

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a regular file's bytes through a tar archive; `FileNotFoundError` if missing."""
        self._check_open()
        path = path if path.startswith("/") else posixpath.join(self.config.workdir, path)
        if self._under_tmpfs(path):  # the daemon's archive API does not see into tmpfs mounts
            return self._read_via_exec(path, max_bytes)
        try:
            stream, stat = self.container.get_archive(path)
            if (stat or {}).get("mode", 0) & (1 << 31):  # no stat header: not known to be a directory
                raise DirectoryInSandboxError(f"{path} is a directory")
            data = first_file(stream, max_bytes)
        except docker.errors.NotFound as exc:
            if "No such container" in str(exc):
                raise self._dead_error(f"read {path}", exc) from exc
            raise FileNotInSandboxError(f"{path}: no such file in sandbox") from exc
        except docker.errors.APIError as exc:
            if is_not_running_error(exc):
                raise self._dead_error(f"read {path}", exc) from exc
            raise SandboxError(f"read {path}: {exc}") from exc
        except (
            requests.exceptions.RequestException,
            urllib3.exceptions.HTTPError,
        ) as exc:  # dropped, or cut off mid-archive
            self._raise_if_dead(f"read {path}", exc)
            raise SandboxError(f"read {path}: Docker daemon error: {exc}") from exc
        if data is None:
            raise SandboxError(f"{path} is not a regular file")
        return data

    def _read_via_exec(self, path: str, max_bytes: int | None) -> bytes:
        q = shlex.quote(path)
        res = self.exec(
            f"if [ -d {q} ]; then echo DIR; elif [ -f {q} ]; then echo FILE; base64 -w0 {q}; else echo MISSING; fi",
            timeout=120,
            max_output=1 << 30,
        )
        kind, _, payload = res.output.partition("\n")
        if kind == "MISSING":
            raise FileNotInSandboxError(f"{path}: no such file in sandbox")
        if kind == "DIR":
            raise DirectoryInSandboxError(f"{path} is a directory")
        data = base64.b64decode(payload.strip())
        return data if max_bytes is None else data[:max_bytes]

    def upload_dir(self, local_dir: str, dest: str) -> None:
        """Copy a host directory's contents into `dest` (created first) as one tar archive."""
        self._check_open()
        self._mkdir(dest)
        uid, gid = self._owner()
        self._put_archive(dest, dir_archive(local_dir, uid, gid), f"upload {local_dir} to {dest}")

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the runner and remove the container; idempotent, tolerant of a container already gone."""
        with lifecycle.busy():  # `lifecycle.settle` waits for a removal no caller awaits (a cancelled `aclose`)
            self._close()

    def _close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            slot, self._slot = self._slot, None
        lifecycle.unregister(self)
        KEEPER.drop(self)
        try:  # the slot is freed once the container is gone: a cap counts containers on the host, removals too
            if self._remove():
                self._report("ended", "closed")
        finally:
            if slot is not None:
                hosts.release(slot)

    def _remove(self) -> bool:
        """Remove the container; False when its host does not answer (then its lease, or `prune`, ends it)."""
        if self._runner is not None:
            self._runner.close()
        try:
            with_retries(lambda: self.container.remove(force=True), f"remove {self.name}")
        except SandboxDeadError:
            pass
        except SandboxError as exc:
            if hosts.is_unreachable(exc):  # its host is gone: its lease, `rollgym sandbox prune` or its TTL ends it
                hosts.mark_down(self.host, str(exc))
                return False
            if "already in progress" not in str(exc) and "No such container" not in str(exc):
                raise
        return True

    def take_slot(self) -> str | None:
        """Hand this sandbox's placement slot (its host) to the caller, who gives it to a new sandbox there
        (`_reserved_host`) or releases it (`hosts.release`); closing this one then frees none. SWE grading
        reuses the episode's slot so: it never waits for one in a worker thread."""
        with self._close_lock:
            slot, self._slot = self._slot, None
        return slot

    async def aclose(self) -> None:
        """`close` that completes even if the awaiting task is cancelled."""
        await asyncio.shield(asyncio.to_thread(self.close))

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    async def __aenter__(self) -> DockerSandbox:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"DockerSandbox(name={self.name!r}, image={self.config.image!r}, host={self.host!r}, closed={self._closed})"
        )


async def start_sandbox(config: SandboxConfig) -> DockerSandbox:
    """Create a sandbox in a worker thread without blocking the event loop. If the caller is cancelled
    meanwhile (Ctrl-C, SIGTERM, a timeout during setup), the thread still finishes creating the container
    and then removes it itself: the cleanup depends on no event loop, which may already be gone (after
    SIGTERM, `asyncio.run` cancels the remaining tasks and only waits for the executor's threads)."""
    lock, state = threading.Lock(), {"abandoned": False, "sandbox": None}
    # A slot is waited for here, not in a worker thread: those threads also close sandboxes (which free slots).
    host = await hosts.areserve(configured_hosts(config.docker_host, config.runtime), config.max_per_host)

    def create() -> DockerSandbox | None:
        sandbox = DockerSandbox(config, _reserved_host=host)
        with lock:
            if not state["abandoned"]:
                state["sandbox"] = sandbox
                return sandbox
        sandbox.close()  # the caller left while the container was being created
        return None

    try:
        sandbox = await asyncio.to_thread(create)
    except asyncio.CancelledError:
        with lock:
            state["abandoned"] = True
            delivered = state["sandbox"]
        if delivered is not None:  # created, but the result never reached the caller
            # Not a daemon thread: a process exiting right now waits for the removal instead of cutting it off.
            threading.Thread(target=delivered.close, name="rollgym-sandbox-cleanup").start()
        raise
    assert sandbox is not None
    return sandbox
