"""Errors of environments, rooted at `EnvError` in `rollgym.errors` (the one error tree)."""

from __future__ import annotations

from gymnasium.error import NameNotFound

from rollgym.errors import EnvError


class UnknownEnvironmentError(EnvError, NameNotFound):
    """An unknown environment id; the message names the closest registered ids."""


class InvalidTaskError(EnvError, ValueError):
    """A task row the environment cannot use (missing fields, bad JSON, a wrong base commit)."""


class InvalidActionError(EnvError, ValueError):
    """`step()` was given something other than one assistant message."""


class EpisodeStateError(EnvError, RuntimeError):
    """`step()` with no episode in progress, or the sync API called inside a running event loop."""


class InvalidRewardError(EnvError, ValueError):
    """A reward or reward component that is not a finite number (NaN would poison a GRPO group)."""


class InvalidReplyError(EnvError, ValueError):
    """The environment's reply is not a list of chat messages, or is empty while the episode goes on."""


class ScorerError(EnvError, RuntimeError):
    """A suite's own scorer raised or returned no finite number: the rollout records it, and the batch goes on."""


class EnvCheckError(EnvError, AssertionError):
    """`check_env` found the environment breaking gymnasium's or rollgym's contract; the message says where."""


__all__ = [
    "EnvCheckError",
    "EpisodeStateError",
    "InvalidActionError",
    "InvalidReplyError",
    "InvalidRewardError",
    "InvalidTaskError",
    "ScorerError",
    "UnknownEnvironmentError",
]
