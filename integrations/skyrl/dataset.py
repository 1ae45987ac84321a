"""rollgym tasks as rows of the dataset SkyRL's `PromptDataset` reads: `prompt`, `env_class` (the rollgym environment
id) and `task` (JSON), which SkyRL hands the generator as `env_extras`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rollgym.envs.core.tasks import task_id_of
from rollgym.integrations.live_rows import task_text


def dataset_rows(env_id: str, tasks: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One SkyRL row per task. `prompt` is what SkyRL filters by length; the episode's prompt is the environment's."""
    rows = []
    for index, task in enumerate(tasks):
        text = task_text(task)
        rows.append(
            {
                "prompt": [{"role": "user", "content": str(text)}],
                "env_class": env_id,
                "task": json.dumps(task, ensure_ascii=False),
                "task_id": task_id_of(task, index),
            }
        )
    return rows
