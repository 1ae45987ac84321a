"""Where a run's tasks come from: rows, a JSONL file, a `datasets` directory, `bundled`, or the env's own."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollgym.errors import UsageError


class TasksNotFoundError(UsageError, FileNotFoundError):
    """`--tasks` names nothing that exists."""


def load_tasks(
    env_id: str, source: str | os.PathLike | Iterable[dict[str, Any]] | None = None, *, num_tasks: int | None = None
) -> list[dict[str, Any]]:
    """The task rows of a run: from a JSONL file, a `datasets` directory, `bundled` (the SWE tasks), any iterable of
    rows (a list, a `datasets.Dataset`), or (None) the environment's own `default_tasks`; at most `num_tasks` of
    them (the env's own: 8 by default). The one loader behind `rollgym.generate`, the CLI and the TRL examples."""
    if source is not None and not isinstance(source, (str, os.PathLike)):
        rows = [dict(row) for row in source]
        return rows[:num_tasks] if num_tasks else rows
    if source in (None, "", "default"):
        from rollgym.envs import Env, make

        env = make(env_id)
        try:
            inner = env.unwrapped
            if not isinstance(inner, Env):  # a plain gymnasium environment: no tasks of its own
                raise UsageError(f"{env_id} is not a rollgym environment, so it has no default tasks; pass tasks")
            return list(inner.default_tasks(num_tasks or 8))
        finally:
            env.close()
    if source == "bundled":
        from rollgym.envs.swe.task import load_bundled_tasks

        tasks = [t.model_dump(mode="json") for t in load_bundled_tasks()]
        return tasks[:num_tasks] if num_tasks else tasks
    path = Path(source)
    if path.is_file():
        try:
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise UsageError(f"{source} is not JSON lines: {exc}") from None
        from rollgym.envs.swe.task import with_task_file

        rows = with_task_file(rows, path)  # SWE rows: a relative sdist is next to the file, from any directory
    elif path.is_dir():
        from datasets import Dataset, load_from_disk

        data = load_from_disk(str(path))
        if not isinstance(data, Dataset):  # a DatasetDict iterates over its split names, not rows
            raise UsageError(
                f"{source} holds several splits ({', '.join(str(split) for split in data)}); pass the directory of one"
            )
        rows = [dict(r) for r in data]
    else:
        raise TasksNotFoundError(
            f"no tasks at {source!r}: pass a JSONL file, a `datasets` save_to_disk directory, or `bundled`"
        )
    return rows[:num_tasks] if num_tasks else rows
