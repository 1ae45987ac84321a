"""Where a run's tasks come from: rows, a JSONL file, a `datasets` directory, `bundled`, or the env's own."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from rollgym.envs.core.task_sources import read_task_source
from rollgym.errors import UsageError


def load_tasks(
    env_id: str,
    source: str | os.PathLike | Iterable[dict[str, Any]] | None = None,
    *,
    num_tasks: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The task rows of a run: from a JSONL file, a `datasets` directory, `bundled` (the SWE tasks), any iterable of
    rows (a list, a `datasets.Dataset`), or (None) the environment's own `default_tasks` (made with `env_kwargs`); at
    most `num_tasks` of them (the env's own: 8 by default). The one loader behind `rollgym.generate`, the CLI and the
    TRL examples."""
    if source is not None and not isinstance(source, (str, os.PathLike)):
        rows = task_rows(source)
        return rows[:num_tasks] if num_tasks else rows
    if source in (None, "", "default"):
        from rollgym.envs import Env, make
        from rollgym.envs.core.wrappers import inner_env

        env = make(env_id, **(env_kwargs or {}))
        try:
            inner = inner_env(env)
            if not isinstance(inner, Env):  # a plain gymnasium environment: no tasks of its own
                raise UsageError(f"{env_id} is not a rollgym environment, so it has no default tasks; pass tasks")
            return list(inner.default_tasks(num_tasks or 8))
        finally:
            env.close()
    rows = read_task_source(source)  # a source the environments registered (`bundled`, SWE task folders), or a file
    return rows[:num_tasks] if num_tasks else rows


def task_rows(source: Any) -> list[dict[str, Any]]:
    """Rows given as an iterable of dicts, checked: one dict, a class, or rows that are not dicts are refused with
    what was given and what is expected, before any rollout."""
    if isinstance(source, dict):
        raise UsageError("tasks is one row (a dict): pass a list of rows, e.g. tasks=[row]")
    if isinstance(source, type) or not isinstance(source, Iterable):
        raise UsageError(
            f"tasks must be rows (a list of dicts, a datasets.Dataset), a path, 'bundled' or None, "
            f"not {getattr(source, '__name__', type(source).__name__)}"
        )
    rows = []
    for i, row in enumerate(source):
        if not isinstance(row, Mapping):
            raise UsageError(f"task row {i} is a {type(row).__name__}, not a dict of the task's fields")
        rows.append(dict(row))
    return rows
