"""Task sources beyond a plain rows file, registered by the environments that own them, so the rollout core that
reads a run's tasks (`rollgym.load_tasks`) names no environment: named sources (`bundled`: the SWE tasks) and readers
tried on a path before the plain file reader (an SWE task folder; a file whose rows carry relative sdists)."""

from __future__ import annotations

import os
from typing import Any

from rollgym.envs.core.entry_points import EntryPoint, load
from rollgym.envs.core.tasks import read_rows

_NAMED: dict[str, EntryPoint] = {}
_READERS: list[EntryPoint] = []


def register_task_source(name: str, loader: EntryPoint) -> None:
    """Make the tasks source `name` (e.g. `bundled`) stand for `loader()`'s rows."""
    _NAMED[name] = loader


def register_task_reader(reader: EntryPoint) -> None:
    """Try `reader(path)` on a tasks path before the plain file reader: its rows, or None when the path is not of its
    kind. The first registered reader that answers wins; registering one again changes nothing."""
    if reader not in _READERS:
        _READERS.append(reader)


def read_task_source(source: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows a named source or a path holds: a registered source or reader's, else `read_rows`'s."""
    if isinstance(source, str) and source in _NAMED:
        return list(load(_NAMED[source])())
    for reader in _READERS:
        rows = load(reader)(source)
        if rows is not None:
            return rows
    return read_rows(source)
