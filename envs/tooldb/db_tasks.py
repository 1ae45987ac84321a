"""General-agent task folders: `instruction.md`, `db.json` (the database the tools act on), and `tools.py`: a class
whose `@tool` methods act on the database it is made with (`Tools(db)`), and `verify(db) -> float`, the reward."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict

from rollgym.envs.core import tool
from rollgym.envs.core.errors import InvalidTaskError

TASK_FILES = ("instruction.md", "tools.py", "db.json")


class ToolDBTask(BaseModel):
    """One task folder, read: its id (the folder's name), instruction, database, and its tools.py module."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    task_id: str
    task_dir: Path
    instruction: str
    db: dict[str, Any]
    module: ModuleType

    def tools_class(self) -> type:
        """The class of tools.py that has `@tool` methods (its tools, made with the database)."""
        for value in vars(self.module).values():
            if isinstance(value, type) and value.__module__ == self.module.__name__ and _has_tools(value):
                return value
        raise InvalidTaskError(f"{self.task_id}: tools.py defines no class with @tool methods")

    def verify(self, db: dict[str, Any]) -> float:
        return float(self.module.verify(db))


def _has_tools(cls: type) -> bool:
    """Whether a class has methods marked by `@tool` (the mark is the attribute `tools.py` of envs/core sets)."""
    return any(hasattr(v, "__rollgym_tool__") for v in vars(cls).values())


def is_tooldb_dir(path: str | os.PathLike) -> bool:
    return all((Path(path) / name).is_file() for name in TASK_FILES)


def is_tooldb_source(path: str | os.PathLike) -> bool:
    path = Path(path)
    return path.is_dir() and (is_tooldb_dir(path) or any(is_tooldb_dir(p) for p in path.iterdir()))


def tooldb_rows(path: str | os.PathLike) -> list[dict[str, Any]] | None:
    """The rows of a task folder or a folder of them (sorted by id), or None when `path` is neither."""
    if not is_tooldb_source(path):
        return None
    path = Path(path).absolute()
    dirs = [path] if is_tooldb_dir(path) else sorted(p for p in path.iterdir() if is_tooldb_dir(p))
    return [{"task_id": d.name, "task_dir": str(d)} for d in dirs]


def read_tooldb_task(row: dict[str, Any]) -> ToolDBTask:
    """A row's folder, read: tools.py imported with `tool` (rollgym's) in its namespace, so `@tool` needs no import."""
    folder = Path(str(row.get("task_dir") or "")).absolute()
    if not is_tooldb_dir(folder):
        raise InvalidTaskError(f"{folder} is not a general-agent task folder (it needs {', '.join(TASK_FILES)})")
    spec = importlib.util.spec_from_file_location(
        f"rollgym_tooldb_{folder.name.replace('-', '_')}", folder / "tools.py"
    )
    assert spec is not None and spec.loader is not None  # a file location always has a loader
    module = importlib.util.module_from_spec(spec)
    module.tool = tool  # pyright: ignore[reportAttributeAccessIssue]  # `@tool` in tools.py without an import
    try:
        spec.loader.exec_module(module)
        db = json.loads((folder / "db.json").read_text())
    except Exception as exc:
        raise InvalidTaskError(f"{folder.name}: cannot load tools.py or db.json: {type(exc).__name__}: {exc}") from exc
    if not callable(getattr(module, "verify", None)):
        raise InvalidTaskError(f"{folder.name}: tools.py defines no verify(db)")
    task = ToolDBTask(
        task_id=folder.name, task_dir=folder, instruction=(folder / "instruction.md").read_text(), db=db, module=module
    )
    task.tools_class()  # a clear error now
    return task
