"""General-agent task folders (`tools.py` with `@tool` methods over a JSON database, `db.json`, `verify(db)`) as an
in-process tool environment: no container, the task's `verify` is the reward."""

from rollgym.envs.tooldb.db_tasks import ToolDBTask, is_tooldb_source, read_tooldb_task, tooldb_rows

__all__ = ["ToolDBTask", "is_tooldb_source", "read_tooldb_task", "tooldb_rows"]
