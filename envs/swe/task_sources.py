"""The SWE environment's task sources (registered in `rollgym.envs`): `bundled`, task folders, and files whose rows
name their sdists relative to the file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rollgym.envs.core.tasks import read_rows


def bundled_rows() -> list[dict[str, Any]]:
    """The SWE tasks that ship with rollgym, as plain rows."""
    from rollgym.envs.swe.task import load_bundled_tasks

    return [t.model_dump(mode="json") for t in load_bundled_tasks()]


def read_swe_tasks(source: str | os.PathLike) -> list[dict[str, Any]] | None:
    """An SWE-bench 5 task repo's (or one task folder's) rows, a file's rows each noting the file its relative sdist is
    next to, or None (a `datasets` folder, or nothing there: the plain reader's to read or refuse)."""
    from rollgym.envs.swe.task import with_task_file
    from rollgym.envs.swe.task_folders import is_task_folder, read_task_folders

    if is_task_folder(source):
        return read_task_folders(source)
    if Path(source).is_file():
        return with_task_file(read_rows(source), source)  # a relative sdist is next to the file, from any directory
    return None
