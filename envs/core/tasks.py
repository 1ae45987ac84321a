"""What a task is to rollgym: a JSON-able dict row, and the one rule that gives it a stable id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def task_id_of(task: Mapping[str, Any] | None, index: int | None = None) -> str:
    """A task's id: `instance_id` (SWE-bench rows), else `task_id`, else `task-{index}` (its position), else ''."""
    task = task or {}
    found = task.get("instance_id") or task.get("task_id")
    if found:
        return str(found)
    return f"task-{index}" if index is not None else ""
