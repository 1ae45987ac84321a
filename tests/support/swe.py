"""A task authored outside rollgym's package: a row in a JSONL file in a temporary directory, with its sdist
beside it under a name rollgym does not bundle (a copy of a bundled task's sdist, so its image is cheap)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rollgym.envs.swe import SWETask, load_bundled_tasks
from rollgym.envs.swe.task import BUNDLED_SDISTS

BASE = "inflection__ordinal-teens"
SDIST = "my-inflection.tar.gz"


def bundled(instance_id: str = BASE) -> SWETask:
    return next(t for t in load_bundled_tasks() if t.instance_id == instance_id)


def authored_row(**changes: Any) -> dict[str, Any]:
    """The bundled task as a new author would write it: its own id, the sdist by a relative name; `changes`
    replace fields (`env_spec` is merged)."""
    base = bundled()
    row = base.model_dump(mode="json", exclude={"env_spec": {"task_file"}})
    row.update(instance_id="authored__ordinal-teens", env_spec={**row["env_spec"], "sdist": SDIST})
    spec = changes.pop("env_spec", {})
    row.update(changes)
    row["env_spec"].update(spec)
    return row


def write_tasks(directory: Path, *rows: dict[str, Any]) -> Path:
    """`directory/tasks.jsonl` holding `rows`, with the sdist beside it; the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(BUNDLED_SDISTS / bundled().env_spec.sdist, directory / SDIST)
    path = directory / "tasks.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
