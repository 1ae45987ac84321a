"""Registration with gymnasium under `rollgym/...` ids, and `make` that suggests the closest id."""

from __future__ import annotations

import difflib
from typing import Any

import gymnasium

from rollgym.envs.core.errors import UnknownEnvironmentError

NAMESPACE = "rollgym"


def register_env(env_id: str, entry_point: Any, **kwargs: Any) -> None:
    """Register an environment with gymnasium (idempotent); ids look like `rollgym/Name-v0`.

    gymnasium's passive environment checker stays on: `make` wraps the environment in it, as for any
    gymnasium environment (rollgym drives the environment under it through the async API: envs/core/wrappers.py).
    """
    if env_id in gymnasium.registry:
        return
    gymnasium.register(id=env_id, entry_point=entry_point, kwargs=kwargs)


def suggest(env_id: str) -> list[str]:
    """Registered ids closest to `env_id` (case-insensitive)."""
    ids = list(gymnasium.registry)
    lowered = {i.lower(): i for i in ids}
    return [lowered[m] for m in difflib.get_close_matches(env_id.lower(), list(lowered), n=3, cutoff=0.5)]


def make(env_id: str, **kwargs: Any) -> gymnasium.Env:
    """`gymnasium.make`, with an error that suggests the closest registered id for unknown ids."""
    if env_id not in gymnasium.registry:
        close = suggest(env_id)
        ours = sorted(i for i in gymnasium.registry if i.startswith(NAMESPACE + "/"))
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownEnvironmentError(
            f"no environment {env_id!r} is registered.{hint} rollgym provides: {', '.join(ours)}"
        )
    return gymnasium.make(env_id, **kwargs)
