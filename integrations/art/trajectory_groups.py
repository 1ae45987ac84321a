# pyright: reportMissingImports=false, reportAttributeAccessIssue=false
# (art is installed where ART trains, not in rollgym's own venv; without it pyright takes `art` for this room's folder)
"""rollgym's ART records as ART's own objects: `art.Trajectory` / `art.TrajectoryGroup`, validated by ART's pydantic
models, each `Choice` built as OpenAI's (ART's `Trajectory` keeps a dict a dict: its message type skips validation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import art
from art.trajectories import PydanticException
from openai.types.chat.chat_completion import Choice

from rollgym.integrations.art.trajectory_record import is_choice
from rollgym.integrations.trainer_versions import require_trainer


def _entries(entries: list[dict[str, Any]]) -> list[Any]:
    return [Choice.model_validate(e) if is_choice(e) else e for e in entries]


def art_trajectory(record: dict[str, Any]) -> art.Trajectory:
    """An `art.Trajectory` from `trajectory_record`'s fields, its choices as `Choice` objects."""
    histories = [
        {**h, "messages_and_choices": _entries(h["messages_and_choices"])} for h in record["additional_histories"]
    ]
    return art.Trajectory.model_validate(
        {**record, "messages_and_choices": _entries(record["messages_and_choices"]), "additional_histories": histories}
    )


def art_group(record: dict[str, Any]) -> art.TrajectoryGroup:
    """An `art.TrajectoryGroup` from `group_records`' fields, failed rollouts in its `exceptions`."""
    require_trainer("openpipe-art")
    group = art.TrajectoryGroup(
        [art_trajectory(t) for t in record["trajectories"]], metadata=dict(record.get("metadata") or {})
    )
    group.exceptions = [PydanticException.model_validate(e) for e in record.get("exceptions", [])]
    return group


def load_trajectory_groups(path: str | Path) -> list[art.TrajectoryGroup]:
    """`rollgym export RUN --format art`'s file as ART's groups, ready for `await model.train(groups)`."""
    with open(path, encoding="utf-8") as fh:
        return [art_group(json.loads(line)) for line in fh if line.strip()]
