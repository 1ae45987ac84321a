"""Harbor task folders (`task.toml`, `instruction.md`, `environment/`, `tests/test.sh`, `solution/solve.sh`): one
task's folder or a dataset folder of them, read into `HarborTask`s; a row is `{"task_id", "task_dir"}`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.harbor.config import HarborTaskConfig
from rollgym.envs.harbor.errors import UnsupportedTaskError
from rollgym.envs.harbor.mcp import harbor_mcp_servers

TASK_FILE = "task.toml"
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")


class HarborTask(BaseModel):
    """One task folder, read: its id (the folder's name), its folder, its instruction and its task.toml."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    task_dir: Path
    instruction: str
    config: HarborTaskConfig

    @property
    def environment_dir(self) -> Path:
        return self.task_dir / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.task_dir / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.task_dir / "solution"

    def row(self) -> dict[str, Any]:
        """The task as a plain row (what `rollgym.load_tasks` gives and `reset(options={"task": row})` takes)."""
        return {"task_id": self.task_id, "task_dir": str(self.task_dir)}


def is_harbor_task_dir(path: str | os.PathLike) -> bool:
    return (Path(path) / TASK_FILE).is_file() and (Path(path) / "instruction.md").is_file()


def is_harbor_source(path: str | os.PathLike) -> bool:
    """A Harbor task folder, or a folder whose subfolders are Harbor task folders."""
    path = Path(path)
    return path.is_dir() and (is_harbor_task_dir(path) or any(is_harbor_task_dir(p) for p in path.iterdir()))


def harbor_rows(path: str | os.PathLike) -> list[dict[str, Any]] | None:
    """The rows of a task folder or a dataset folder of them (sorted by id), or None when `path` is neither."""
    if not is_harbor_source(path):
        return None
    path = Path(path).absolute()
    dirs = [path] if is_harbor_task_dir(path) else sorted(p for p in path.iterdir() if is_harbor_task_dir(p))
    return [{"task_id": d.name, "task_dir": str(d)} for d in dirs]


def read_task(task_dir: str | os.PathLike) -> HarborTask:
    """One task folder, checked: `InvalidTaskError` for a folder that is not a task (saying what is missing or
    wrong), `UnsupportedTaskError` naming each feature rollgym does not run."""
    folder = Path(task_dir).absolute()
    if not is_harbor_task_dir(folder):
        raise InvalidTaskError(f"{folder} is not a Harbor task folder (it needs task.toml and instruction.md)")
    try:
        config = HarborTaskConfig.model_validate(tomllib.loads((folder / TASK_FILE).read_text()))
    except (tomllib.TOMLDecodeError, ValidationError, ValueError) as exc:
        raise InvalidTaskError(f"{folder.name}: task.toml is not valid: {exc}") from None
    task = HarborTask(
        task_id=folder.name, task_dir=folder, instruction=(folder / "instruction.md").read_text(), config=config
    )
    refused = config.refusals()
    if any((task.environment_dir / name).is_file() for name in COMPOSE_FILES):
        refused.append("environment/docker-compose.yaml (multi-container tasks are not supported yet)")
    if refused:
        raise UnsupportedTaskError(f"{task.task_id}: not supported by rollgym: {'; '.join(refused)}")
    if not (task.tests_dir / "test.sh").is_file():
        raise InvalidTaskError(f"{task.task_id}: tests/test.sh is missing")
    if config.environment.docker_image is None and not (task.environment_dir / "Dockerfile").is_file():
        raise InvalidTaskError(f"{task.task_id}: neither [environment] docker_image nor environment/Dockerfile")
    harbor_mcp_servers(task.task_id, config.environment.mcp_servers)  # checked here, started with each episode
    return task


def parse_harbor_task(row: dict[str, Any] | HarborTask) -> HarborTask:
    """A row (`task_dir`, the task's folder) as its `HarborTask`."""
    if isinstance(row, HarborTask):
        return row
    if not isinstance(row, dict) or not row.get("task_dir"):
        raise InvalidTaskError(f"not a Harbor task row (it needs task_dir, the task's folder): {row!r:.200}")
    return read_task(row["task_dir"])
