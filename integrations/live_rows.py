"""What every trainer's room does with a dataset row and a finished rollout, whatever the trainer: show a task as
text, read the row's task (a dict, or its JSON as trainers' datasets store it) and append the rollout to a folder
`rollgym view` reads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollgym.errors import UsageError

if TYPE_CHECKING:
    from rollgym.rollouts.records import Rollout


def task_text(task: dict[str, Any]) -> str:
    """The text a trainer's dataset row shows for a task (its question, problem statement or prompt, else its JSON):
    what trainers filter by length; the episode's own prompt is the environment's."""
    return str(task.get("question") or task.get("problem_statement") or task.get("prompt") or json.dumps(task))


def row_task_dict(task: Any, where: str) -> dict:
    """The task a row holds at `where` (named in the error): a dict, or the JSON of one."""
    if isinstance(task, str):
        try:
            task = json.loads(task)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where} is not JSON: {exc}") from None
    if not isinstance(task, dict):
        raise UsageError(f"{where} must be the task as a dict or its JSON, not {type(task).__name__}")
    return task


def append_rollout(folder: str | Path | None, rollout: Rollout) -> None:
    """Append the whole rollout to `folder/rollouts-<pid>.jsonl` (one file per worker process; nothing without a
    folder), for `rollgym view`."""
    if not folder:
        return
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    with open(path / f"rollouts-{os.getpid()}.jsonl", "a", encoding="utf-8") as fh:
        fh.write(rollout.to_json() + "\n")
