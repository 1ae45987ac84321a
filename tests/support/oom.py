"""A memory cgroup to put a process in, so that the kernel's OOM killer, and nothing else, ends it once it allocates
past the limit. cgroup v1 (a child of this process's own memory cgroup) or v2 (a child of its own cgroup, where the
memory controller can be delegated); `MemoryCage.make` says why not where neither can be made (not root, read-only
cgroupfs)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path


class MemoryCage:
    """One cgroup with a memory limit (no swap beyond it); `oom_kills` counts the kernel's kills in it."""

    def __init__(self, path: Path, version: int) -> None:
        self.path, self.version = path, version

    @classmethod
    def make(cls, limit_bytes: int) -> MemoryCage | str:
        """A new cage, or why none can be made here."""
        own = {
            line.split(":", 2)[1]: line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
        }
        name = f"rollgym-oom-{uuid.uuid4().hex[:8]}"
        v1 = Path("/sys/fs/cgroup/memory")
        try:
            if "memory" in own and (v1 / "memory.limit_in_bytes").exists():
                path = v1 / own["memory"].lstrip("/") / name
                path.mkdir()
                (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                if (path / "memory.memsw.limit_in_bytes").exists():
                    (path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
                return cls(path, 1)
            if "" in own and Path("/sys/fs/cgroup/cgroup.controllers").exists():
                path = Path("/sys/fs/cgroup") / own[""].lstrip("/") / name
                path.mkdir()
                (path / "memory.max").write_text(str(limit_bytes))
                (path / "memory.swap.max").write_text("0")
                return cls(path, 2)
        except OSError as exc:
            return f"cannot make a memory cgroup here ({type(exc).__name__}: {exc}; needs root and a writable cgroupfs)"
        return "no memory cgroup controller is mounted"

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def oom_kills(self) -> int:
        """How many processes the OOM killer ended in this cgroup."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        for line in (self.path / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self) -> None:
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:  # its last process is still exiting
                time.sleep(0.1)
