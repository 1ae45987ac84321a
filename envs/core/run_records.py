"""What a run records next to its rollouts besides them (the sandboxes it started: envs/sandbox/record.py), through
recorders registered by the layers that own those resources, so the batch writer (`rollgym.generate`) names no
runtime. A recorder is a context manager factory given the run's output folder, entered for the whole run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from rollgym.envs.core.entry_points import EntryPoint, load

_RECORDERS: list[EntryPoint] = []


def register_run_recorder(recorder: EntryPoint) -> None:
    """Enter `recorder(out)` around every run writing to a folder `out` (registering one again changes nothing)."""
    if recorder not in _RECORDERS:
        _RECORDERS.append(recorder)


@contextlib.contextmanager
def run_records(out: str | Path) -> Iterator[None]:
    """Every registered recorder, entered for the block: the run writing to `out` records what it starts there."""
    with contextlib.ExitStack() as stack:
        for recorder in _RECORDERS:
            stack.enter_context(load(recorder)(Path(out)))
        yield
