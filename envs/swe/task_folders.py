"""SWE-bench 5 task folders (`swebench/task/repo.py`): a task repo (`sweb.yaml`, `tasks/<instance_id>/...`) or one
task's folder (`task.yaml`, `tests.json`, `eval.sh`, `Dockerfile`, the patches), read with the `swebench` package
itself, each row keeping its folder (`task_dir`) so its Dockerfile can build the row's image."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rollgym.envs.swe.harness import harness

TASK_FILE = "task.yaml"


def is_task_folder(path: str | os.PathLike) -> bool:
    """A task repo (a `tasks/` folder whose subfolders hold a task.yaml) or a single task's folder."""
    path = Path(path)
    return (path / TASK_FILE).is_file() or any((path / "tasks").glob(f"*/{TASK_FILE}"))


def read_task_folders(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of a task repo (every task, sorted by id) or of one task's folder, each with its `task_dir`."""
    harness()  # the package's own reader: a clear error when swebench is not installed
    from swebench.task import repo

    path = Path(path).absolute()
    dirs = [path] if (path / TASK_FILE).is_file() else repo.task_dirs(path)
    rows = []
    for folder in dirs:
        row = repo.load_task(folder)
        row["task_dir"] = str(folder)
        rows.append(row)
    return rows
