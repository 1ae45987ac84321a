"""rollgym tasks as rows of the prompt dataset OpenRLHF reads (`--data.input_key input --data.label_key label`),
and back: OpenRLHF hands an executor only a row's prompt text and its label, so the label carries the environment
and the task (as JSON, one string column for every row)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import UsageError
from rollgym.integrations.live_rows import row_task_dict, task_text


def dataset_rows(env_id: str, tasks: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per task: `input` (only what OpenRLHF shows and filters by: the episode's prompt is the one the
    environment renders at reset) and `label`, `{"env_id": ..., "task": ...}` as JSON."""
    rows = []
    for index, task in enumerate(tasks):
        text = task_text(task)
        label = {"env_id": env_id, "task": task, "task_id": task_id_of(task, index)}
        rows.append({"input": str(text), "label": json.dumps(label, ensure_ascii=False)})
    return rows


def label_task(label: Any, default_env: str | None) -> tuple[str, dict]:
    """The environment id and the task of one OpenRLHF label (`dataset_rows`' JSON, or the same as a dict)."""
    if isinstance(label, str):
        try:
            label = json.loads(label)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"a rollgym label is the JSON of {{'env_id', 'task'}}; this one is not JSON: {exc}"
            ) from None
    if not isinstance(label, dict):
        raise UsageError(f"a rollgym label is a dict with 'task' (or its JSON), not {type(label).__name__}")
    env_id = label.get("env_id") or default_env
    if not env_id:
        raise UsageError("no environment for this row: set the label's env_id, or the executor's `env`")
    return str(env_id), row_task_dict(label.get("task"), "the label's task")
