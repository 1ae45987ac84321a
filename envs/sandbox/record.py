"""The durable record of the sandboxes a run started: one JSON line per start and per end, appended as they happen
(`RECORD_FILE` in the run's output folder), so the run's operator, and `rollgym sandbox prune --run DIR`, can account
for every sandbox even after the process that started them was killed.

Who records: whoever sets a sink for the code it runs (`recording(sink)`, a context variable, so it follows the
rollouts into their tasks and worker threads): `rollgym generate` writes to its folder (`RecordFile`); a Ray actor
forwards each event to the driver with its results, which writes them into the same file. A sandbox remembers the
sink it was created under and reports its end there."""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

RECORD_FILE = "sandboxes.jsonl"


class SandboxEvent(BaseModel):
    """One line of the record: a sandbox being created (written before the daemon's create call, so an owner killed
    inside it leaves the name on record), created and started, or ended (`how`: closed by its owner, pruned, gone)."""

    event: Literal["creating", "started", "ended"]
    name: str  # unique: rollgym-<task>-<random>
    id: str = ""  # the container's id on its host, once created
    host: str  # the daemon's address, as configured (`default`, unix://, tcp://, ssh://)
    at: float  # unix time
    run_id: str = ""
    task_id: str = ""
    owner: str = ""  # machine:pid of the process that started it
    runtime: str = ""  # docker or podman
    lease_s: float = 0.0
    how: str = ""


class SandboxEntry(BaseModel):
    """A sandbox as the record tells it: when it started and, once known, when and how it ended."""

    name: str
    id: str = ""  # empty: its owner died inside the create call (the daemon may still have made it, by this name)
    host: str
    created: float
    ended: float | None = None
    how: str = ""
    run_id: str = ""
    task_id: str = ""
    owner: str = ""
    runtime: str = ""
    lease_s: float = 0.0


Sink = Callable[[SandboxEvent], None]
_SINK: contextvars.ContextVar[Sink | None] = contextvars.ContextVar("rollgym_sandbox_record", default=None)


@contextlib.contextmanager
def recording(sink: Sink | None) -> Iterator[None]:
    """Report the sandboxes created inside the block (and in the tasks and threads it starts) to `sink`."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


@contextlib.contextmanager
def record_run(folder: str | Path) -> Iterator[None]:
    """Record the sandboxes started inside the block into the run folder's record (the run recorder `rollgym.envs`
    registers, entered by `rollgym.generate` for a whole run)."""
    with recording(RecordFile(record_path(folder))):
        yield


def current() -> Sink | None:
    """The sink a sandbox created here reports to (None: no record)."""
    return _SINK.get()


class RecordFile:
    """A sink appending each event to a JSONL file as one line, flushed at once (a kill -9 right after loses none)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __call__(self, event: SandboxEvent) -> None:
        line = event.model_dump_json() + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)


def record_path(folder: str | Path) -> Path:
    """The record's file in a run's output folder."""
    return Path(folder) / RECORD_FILE


def read_record(folder: str | Path) -> list[SandboxEntry]:
    """Every sandbox the run's record lists, in the order they started (a torn last line is skipped)."""
    entries: dict[str, SandboxEntry] = {}
    path = record_path(folder)
    if not path.exists():
        return []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = SandboxEvent.model_validate(json.loads(line))
        except ValueError:
            continue
        key = f"{event.host}|{event.name}"
        if event.event != "ended":
            entry = entries.setdefault(
                key,
                SandboxEntry(
                    **event.model_dump(include={"name", "host", "run_id", "task_id", "owner", "runtime", "lease_s"}),
                    created=event.at,
                ),
            )
            entry.id = entry.id or event.id
        elif key in entries and entries[key].ended is None:
            entries[key].ended, entries[key].how = event.at, event.how
    return list(entries.values())


def ended_event(entry: SandboxEntry, how: str) -> SandboxEvent:
    """The line that closes `entry` in the record (`rollgym sandbox prune --run`)."""
    return SandboxEvent(event="ended", name=entry.name, id=entry.id, host=entry.host, at=time.time(), how=how)
