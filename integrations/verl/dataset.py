"""rollgym tasks as rows of the Parquet file verl's `RLHFDataset` reads (`data.train_files`), one row per task.

verl routes a row to an agent loop by its `agent_name` and passes the row's columns to `run`; the rollgym loop reads
its environment and task from `extra_info`. `prompt` is only what verl shows and filters by length: the episode's
real prompt is the one the environment renders at reset.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.integrations.live_rows import task_text


def dataset_rows(
    env_id: str, tasks: Iterable[dict[str, Any]], *, agent_name: str = "rollgym", data_source: str | None = None
) -> list[dict[str, Any]]:
    """One verl row per task: `prompt`, `data_source`, `agent_name`, `reward_model` and `extra_info` holding
    `env_id`, the task as JSON (Parquet needs one schema across rows) and its id and index."""
    rows = []
    for index, task in enumerate(tasks):
        text = task_text(task)
        rows.append(
            {
                "data_source": data_source or env_id,
                "agent_name": agent_name,
                "prompt": [{"role": "user", "content": str(text)}],
                "reward_model": {"style": "rule", "ground_truth": ""},
                "extra_info": {
                    "env_id": env_id,
                    "task": json.dumps(task, ensure_ascii=False),
                    "task_id": task_id_of(task, index),
                    "index": index,
                },
            }
        )
    return rows
