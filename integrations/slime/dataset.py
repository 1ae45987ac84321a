"""rollgym tasks as rows of the JSON-lines prompt file slime reads (`--prompt-data`, `--input-key input`), one row per
task: slime keeps a row's `metadata` column on its `Sample` (slime/utils/data.py:237, `--metadata-key`), so the
metadata names the environment and the task the live hook (`rollgym_generate`) runs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.integrations.live_rows import task_text


def dataset_rows(env_id: str, tasks: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per task: `input` (only what slime shows and filters by length: the episode's prompt is the one the
    environment renders at reset) and `metadata` with `env_id`, the task as JSON and its id."""
    rows = []
    for index, task in enumerate(tasks):
        text = task_text(task)
        metadata = {"env_id": env_id, "task": json.dumps(task, ensure_ascii=False), "task_id": task_id_of(task, index)}
        rows.append({"input": str(text), "metadata": metadata})
    return rows
