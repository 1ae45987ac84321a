"""Registration with gymnasium under `rollgym/...` ids, and `make` that suggests the closest id."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import gymnasium

from rollgym.envs.core.errors import UnknownEnvironmentError

NAMESPACE = "rollgym"


def register_env(env_id: str, entry_point: Any, **kwargs: Any) -> None:
    """Register an environment with gymnasium (idempotent); ids look like `rollgym/Name-v0`.

    gymnasium's passive environment checker stays on: `make` wraps the environment in it, as for any
    gymnasium environment (rollgym drives the environment under it through the async API: envs/core/wrappers.py).
    """
    known = gymnasium.registry.get(env_id)
    if known is not None:
        if known.entry_point == entry_point and dict(known.kwargs or {}) == kwargs:
            return
        del gymnasium.registry[env_id]  # a new definition replaces the old (an edited class in a notebook takes effect)
    gymnasium.register(id=env_id, entry_point=entry_point, kwargs=kwargs)


def import_named_module(env_id: str) -> str:
    """`module:namespace/Name-v0` (gymnasium's own form): import `module`, which registers the environment, and
    return the id; an id without a module is returned as it is."""
    module, sep, name = env_id.partition(":")
    if not sep or "/" in module:
        return env_id
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise UnknownEnvironmentError(f"cannot import {module!r}, the module {env_id!r} names: {exc}") from None
    return name


def suggest(env_id: str) -> list[str]:
    """Registered ids closest to `env_id` (case-insensitive)."""
    ids = list(gymnasium.registry)
    lowered = {i.lower(): i for i in ids}
    return [lowered[m] for m in difflib.get_close_matches(env_id.lower(), list(lowered), n=3, cutoff=0.5)]


def make(env_id: str, **kwargs: Any) -> gymnasium.Env:
    """`gymnasium.make`, with an error that suggests the closest registered id for unknown ids, and one that names
    the extra to install for a suite's id whose package is absent. `module:id` imports `module` first (where your
    environment is registered), as `gymnasium.make` takes it."""
    from rollgym.envs.core.suites import require_installed  # suites registers through this module

    env_id = import_named_module(env_id)
    if env_id not in gymnasium.registry:
        close = suggest(env_id)
        ours = sorted(i for i in gymnasium.registry if i.startswith(NAMESPACE + "/"))
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownEnvironmentError(
            f"no environment {env_id!r} is registered.{hint} rollgym provides: {', '.join(ours)}; an environment of "
            f"your own: name the module that registers it, 'your_module:{env_id}'; `rollgym envs` lists every id"
        )
    require_installed(env_id)
    return gymnasium.make(env_id, **kwargs)
