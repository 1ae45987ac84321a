"""The τ² environments' own failures: the user model not answering is infrastructure (the rollout's error is an
engine's, retried on resume), never a reward of 0."""

from __future__ import annotations

from rollgym.errors import EnvError


class UserModelError(EnvError, RuntimeError):
    """The user model could not be reached or failed to answer (recorded in the `engine` category)."""

    category = "engine"
