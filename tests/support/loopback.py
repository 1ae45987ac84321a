"""Which servers the tests start listen beyond loopback: TCP listeners read from /proc/net/tcp and tcp6, their
owners found through /proc/*/fd, and a test's processes told apart from the machine's own by the session mark
(an environment variable every process the tests start inherits) or by descending from the test session."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass

#: set by tests/conftest.py at import; every process a test starts inherits it (daemonized ones too)
MARK = "ROLLGYM_TEST_SESSION"


@dataclass(frozen=True)
class Listener:
    """A listening TCP socket: its address, port and inode (its identity while it lives)."""

    host: str
    port: int
    inode: str

    @property
    def loopback(self) -> bool:
        address = ipaddress.ip_address(self.host)
        mapped = getattr(address, "ipv4_mapped", None)
        return (mapped or address).is_loopback


def _address(hexaddr: str, v6: bool) -> tuple[str, int]:
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if v6:  # four 32-bit words, each in host (little-endian) order
        host = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
    else:
        host = socket.inet_ntoa(struct.pack("<I", int(ip, 16)))
    return host, int(port, 16)


def listeners() -> list[Listener]:
    """Every TCP socket in LISTEN state in this network namespace."""
    found = []
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            with open(f"/proc/net/{name}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A":  # TCP_LISTEN
                host, port = _address(fields[1], v6)
                found.append(Listener(host, port, fields[9]))
    return found


def wide() -> dict[str, Listener]:
    """The listeners beyond loopback, by inode."""
    return {item.inode: item for item in listeners() if not item.loopback}


def owners(inodes: set[str]) -> dict[str, int]:
    """The pid holding each socket inode (those found)."""
    found: dict[str, int] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                found[link[8:-1]] = int(pid)
    return found


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1 and len(chain) < 64:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        chain.append(pid)
    return chain


def command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "?"


def started_by_tests(pid: int, mark: str, root_pid: int) -> bool:
    """The process carries this session's mark, or descends from the test session's first process."""
    return f"{MARK}={mark}".encode() in _environ(pid).split(b"\0") or root_pid in _ancestors(pid) or pid == root_pid


def exposed(before: set[str], mark: str, root_pid: int) -> list[str]:
    """Listeners beyond loopback that are not in `before` (inodes) and that the tests started, described."""
    new = {inode: item for inode, item in wide().items() if inode not in before}
    if not new:
        return []
    out = []
    for inode, pid in owners(set(new)).items():
        if started_by_tests(pid, mark, root_pid):
            item = new[inode]
            out.append(f"{item.host}:{item.port} (pid {pid}: {command(pid)})")
    return sorted(out)


class LoopbackWatch:
    """Samples the listeners beyond loopback every `period_s` in a thread and files each new one the tests started
    under the test running when it appeared (`current`), so a server that lives only inside one test is caught."""

    def __init__(self, mark: str, root_pid: int, period_s: float = 0.2) -> None:
        import threading

        self.mark, self.root_pid, self.period_s = mark, root_pid, period_s
        self.known: set[str] = set(wide())  # the machine's own, before any test
        self.current = ""
        self.found: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rollgym-loopback-watch", daemon=True)

    def start(self) -> LoopbackWatch:
        self._thread.start()
        return self

    def sample(self) -> None:
        with self._lock:
            now = wide()
            new = set(now) - self.known
            if not new:
                return
            for text in exposed(self.known, self.mark, self.root_pid):
                self.found.setdefault(self.current, []).append(text)
            self.known |= new

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.sample()

    def take(self, nodeid: str) -> list[str]:
        """What the test `nodeid` left or started beyond loopback (sampled once more now)."""
        self.sample()
        with self._lock:
            return self.found.pop(nodeid, [])

    def stop(self) -> None:
        self._stop.set()
