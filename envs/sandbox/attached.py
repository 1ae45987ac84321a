"""`AttachedProcess`: a long-running process inside a sandbox with its stdin, stdout and stderr attached over a
hijacked `docker exec` socket (as the persistent runner is), for protocols spoken over stdio (an MCP server)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import docker

_STDERR_KEEP = 4000


class AttachedProcess:
    """`command` running in a container; its stdout bytes go to `on_stdout` from a reader thread (None at the end)."""

    def __init__(
        self,
        api: docker.APIClient,
        container_id: str,
        command: list[str],
        on_stdout: Callable[[bytes | None], None],
        *,
        user: str | None = None,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
    ) -> None:
        self._api = api
        self.exec_id = api.exec_create(
            container_id,
            command,
            stdin=True,
            stdout=True,
            stderr=True,
            tty=False,
            user=user or "",
            environment=env or None,
            workdir=workdir,
        )["Id"]
        raw = api.exec_start(self.exec_id, socket=True)
        self._sock: socket.socket = getattr(raw, "_sock", raw)  # pyright: ignore[reportAttributeAccessIssue]  # the socket under docker-py's SocketIO, or the socket itself (ssh, TLS)
        self._sock.settimeout(None)
        self._on_stdout = on_stdout
        self._send_lock = threading.Lock()
        self.stderr_tail = bytearray()
        self._reader = threading.Thread(target=self._read_loop, name="rollgym-attached-reader", daemon=True)
        self._reader.start()

    def _recv_exact(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def _read_loop(self) -> None:
        """Demultiplex Docker's 8-byte stream frames: stdout to `on_stdout`, stderr kept (its tail)."""
        try:
            while True:
                header = self._recv_exact(8)
                data = None if header is None else self._recv_exact(struct.unpack(">I", header[4:])[0])
                if header is None or data is None:
                    break
                if header[0] == 2:
                    self.stderr_tail = (self.stderr_tail + data)[-_STDERR_KEEP:]
                else:
                    self._on_stdout(data)
        except OSError:
            pass
        finally:
            self._on_stdout(None)

    def send(self, data: bytes) -> None:
        """Write to the process's stdin (blocking; `OSError` once the connection is gone)."""
        with self._send_lock:
            self._sock.sendall(data)

    def try_send(self, data: bytes, wait_s: float) -> bool:
        """`send`, unless another write holds stdin for longer than `wait_s`: then False, nothing sent."""
        if not self._send_lock.acquire(timeout=wait_s):
            return False
        try:
            self._sock.sendall(data)
        finally:
            self._send_lock.release()
        return True

    def exit_code(self) -> int | None:
        """The process's exit code once it has ended, else None (also when the daemon cannot say)."""
        try:
            info = self._api.exec_inspect(self.exec_id)
        except Exception:  # noqa: BLE001 - a gone container or daemon: nothing to tell
            return None
        return None if info.get("Running") else info.get("ExitCode")

    def close(self) -> None:
        """Close stdin and the connection: a stdio server reads EOF and exits (and dies with its container anyway)."""
        for step in (lambda: self._sock.shutdown(socket.SHUT_RDWR), self._sock.close):
            try:
                step()
            except OSError:
                pass
        self._reader.join(timeout=5)
