"""What a task is to rollgym: a JSON-able dict row, the one rule that gives it a stable id, and reading rows from a
file or folder."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rollgym.errors import UsageError


def task_id_of(task: Mapping[str, Any] | None, index: int | None = None) -> str:
    """A task's id: `instance_id` (SWE-bench rows), else `task_id`, else `task-{index}` (its position), else ''."""
    task = task or {}
    found = task.get("instance_id") or task.get("task_id")
    if found:
        return str(found)
    return f"task-{index}" if index is not None else ""


class TasksNotFoundError(UsageError, FileNotFoundError):
    """A tasks source names nothing that exists."""


def read_rows(source: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of a tasks file or folder: JSON lines (`.jsonl`), a Parquet file (`.parquet`, as the Hugging Face
    hub stores datasets), or a `datasets` `save_to_disk` folder (one split). `UsageError` naming what is wrong."""
    path = Path(source)
    if path.is_dir():
        from datasets import Dataset, load_from_disk

        try:
            data = load_from_disk(str(path))
        except FileNotFoundError as exc:
            raise TasksNotFoundError(f"{source} is a folder but not a `datasets` save_to_disk folder: {exc}") from None
        if not isinstance(data, Dataset):  # a DatasetDict iterates over its split names, not rows
            raise UsageError(
                f"{source} holds several splits ({', '.join(str(split) for split in data)}); pass the folder of one"
            )
        return [dict(r) for r in data]
    if not path.is_file():
        raise TasksNotFoundError(
            f"no tasks at {str(source)!r}: pass a JSONL or Parquet file, a `datasets` save_to_disk folder, or a task "
            "folder"
        )
    if path.suffix == ".parquet":
        from datasets import Dataset

        return [dict(r) for r in Dataset.from_parquet(str(path))]
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{source}:{n}: not valid JSON ({exc})") from None
    return rows
