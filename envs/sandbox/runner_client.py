"""Host side of the persistent runner: one exec socket per sandbox, framed requests, concurrent replies."""

from __future__ import annotations

import itertools
import json
import struct
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import docker

from rollgym.envs.sandbox.attached import AttachedProcess
from rollgym.envs.sandbox.capture import render_output
from rollgym.envs.sandbox.errors import SandboxError
from rollgym.envs.sandbox.models import ExecResult

RUNNER_SOURCE = (Path(__file__).parent / "runner_script.py").read_text()
_LEASE = json.dumps({"op": "lease"}).encode()
LEASE_FRAME = struct.pack(">I", len(_LEASE)) + _LEASE  # the owner's heartbeat, ~20 bytes, never answered


class RunnerError(SandboxError):
    """The persistent runner could not start, or stopped answering."""


class RunnerLostError(RunnerError):
    """The runner stopped after a command was sent: the command may or may not have run."""


class RunnerClient:
    """Talks to `runner_script.py` running inside a container over a hijacked `docker exec` socket."""

    def __init__(self, api: docker.APIClient, container_id: str, user: str | None = None) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._dead: str | None = None
        self._frames = bytearray()
        self._process = AttachedProcess(
            api, container_id, ["python3", "-u", "-c", RUNNER_SOURCE], self._on_stdout, user=user
        )

    @property
    def stderr_tail(self) -> bytearray:
        return self._process.stderr_tail

    def _on_stdout(self, data: bytes | None) -> None:
        """The runner's own frames, parsed from its stdout as they come; each answers its pending request."""
        if data is None:
            tail = self.stderr_tail.decode(errors="replace")[-500:]
            self._fail("runner exited" + (f": {tail}" if tail else ""))
            return
        pending = self._frames
        pending += data
        while len(pending) >= 4:
            hlen = struct.unpack(">I", pending[:4])[0]
            if len(pending) < 4 + hlen:
                break
            header = json.loads(pending[4 : 4 + hlen])
            end = 4 + hlen + header.get("out_len", 0)
            if len(pending) < end:
                break
            body = bytes(pending[4 + hlen : end])
            del pending[:end]
            with self._lock:
                fut = self._pending.pop(header.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result((header, body))

    def _fail(self, why: str) -> None:
        with self._lock:
            self._dead = self._dead or why
            pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(RunnerError(why))

    def _submit(self, header: dict, payload: bytes = b"") -> Future:
        fut: Future = Future()
        rid = next(self._ids)
        header = {**header, "id": rid, "stdin_len": len(payload)}
        raw = json.dumps(header).encode()
        with self._lock:
            if self._dead:
                raise RunnerError(self._dead)
            self._pending[rid] = fut
        try:
            self._process.send(struct.pack(">I", len(raw)) + raw + payload)
        except OSError as exc:
            self._fail(f"runner connection lost: {exc}")
            raise RunnerError(str(exc)) from exc
        return fut

    # -- API -------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._dead is None

    def ping(self, timeout_s: float = 15.0) -> None:
        """Raise `RunnerError` unless the runner answers within `timeout_s`."""
        try:
            header, _ = self._submit({"op": "ping"}).result(timeout=timeout_s)
        except FutureTimeout as exc:
            self._fail("runner did not answer a ping")
            raise RunnerError(f"runner did not answer within {timeout_s}s") from exc
        if not header.get("pong"):
            raise RunnerError(f"unexpected runner reply {header}")

    def renew(self) -> bool:
        """Send one lease heartbeat (the runner passes it to PID 1); False when it cannot go now (the runner is
        gone, or a large upload holds the socket: then the keeper renews through the daemon, lease.py)."""
        if self._dead is not None:
            return False
        try:
            return self._process.try_send(LEASE_FRAME, wait_s=0.1)
        except OSError as exc:
            self._fail(f"runner connection lost: {exc}")
            return False

    def run(
        self,
        cmd: str,
        timeout_s: float,
        cwd: str | None,
        env: dict[str, str] | None,
        max_output: int,
        stdin: bytes = b"",
    ) -> ExecResult:
        """Run `cmd`; the runner enforces the timeout; a runner that stays silent long after it is an error."""
        fut = self._submit(
            {"cmd": cmd, "timeout": timeout_s, "cwd": cwd, "env": env or {}, "max_output": max_output}, stdin
        )
        try:
            header, body = fut.result(timeout=timeout_s + 30)
        except FutureTimeout as exc:
            self._fail("runner stopped answering")
            raise RunnerLostError(f"runner gave no answer {timeout_s + 30:.0f}s after starting the command") from exc
        except RunnerError as exc:
            raise RunnerLostError(str(exc)) from exc
        head_len = header.get("head_len", 0)
        output = render_output(body[:head_len], body[head_len:], header.get("elided", 0))
        if header.get("error"):
            output = f"[rollgym] could not start the command: {header['error']}\n{output}".rstrip("\n")
        return ExecResult(
            exit_code=header.get("exit_code"),
            output=output,
            timed_out=bool(header.get("timed_out")),
            truncated=header.get("elided", 0) > 0,
            elided_bytes=header.get("elided", 0),
            duration_s=header.get("duration_s", 0.0),
            via="runner",
        )

    def close(self) -> None:
        """Close the socket; the runner exits on EOF (and dies with its container anyway)."""
        self._fail("runner closed")
        self._process.close()
