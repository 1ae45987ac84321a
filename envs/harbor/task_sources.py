"""The Harbor environment's task reader (registered in `rollgym.envs`): a task folder or a dataset folder of them."""

from __future__ import annotations

import os
from typing import Any


def read_harbor_tasks(source: str | os.PathLike) -> list[dict[str, Any]] | None:
    """The rows of a Harbor task folder or dataset folder, or None (not Harbor's: another reader's to read)."""
    from rollgym.envs.harbor.folders import harbor_rows

    return harbor_rows(source)
