"""The general-agent environment's task reader (registered in `rollgym.envs`): a task folder or a folder of them."""

from __future__ import annotations

import os
from typing import Any


def read_tooldb_tasks(source: str | os.PathLike) -> list[dict[str, Any]] | None:
    """The rows of a general-agent task folder or a folder of them, or None (another reader's to read)."""
    from rollgym.envs.tooldb.db_tasks import tooldb_rows

    return tooldb_rows(source)
