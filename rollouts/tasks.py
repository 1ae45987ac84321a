"""Where a run's tasks come from: rows, a JSONL file, a `datasets` directory, `bundled`, or the env's own."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollgym.envs.core.tasks import read_rows
from rollgym.errors import UsageError


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
        from rollgym.envs.core.wrappers import inner_env

        env = make(env_id)
        try:
            inner = inner_env(env)
            if not isinstance(inner, Env):  # a plain gymnasium environment: no tasks of its own
                raise UsageError(f"{env_id} is not a rollgym environment, so it has no default tasks; pass tasks")
            return list(inner.default_tasks(num_tasks or 8))
        finally:
            env.close()
    if source == "bundled":
        from rollgym.envs.swe.task import load_bundled_tasks

        tasks = [t.model_dump(mode="json") for t in load_bundled_tasks()]
        return tasks[:num_tasks] if num_tasks else tasks
    from rollgym.envs.swe.task_folders import is_task_folder, read_task_folders

    if is_task_folder(source):  # an SWE-bench 5 task repo, or one task's folder
        rows = read_task_folders(source)
    else:
        rows = read_rows(source)
        if Path(source).is_file():
            from rollgym.envs.swe.task import with_task_file

            rows = with_task_file(rows, source)  # SWE rows: a relative sdist is next to the file, from any directory
    return rows[:num_tasks] if num_tasks else rows
