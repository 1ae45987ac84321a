"""rollgym tasks as rows of the dataset AReaL's trainer iterates (`train_dataset`, e.g. a `datasets.Dataset`): AReaL
hands each row to the workflow as `data`, so a row names its environment and its task, and `messages` is only what
AReaL shows (the episode's prompt is the one the environment renders at reset)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.integrations.live_rows import task_text


def dataset_rows(env_id: str, tasks: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per task: `messages`, `env_id`, the task as JSON (one schema across rows) and its id."""
    rows = []
    for index, task in enumerate(tasks):
        text = task_text(task)
        rows.append(
            {
                "messages": [{"role": "user", "content": str(text)}],
                "env_id": env_id,
                "task": json.dumps(task, ensure_ascii=False),
                "task_id": task_id_of(task, index),
            }
        )
    return rows
