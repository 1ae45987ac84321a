"""The one error tree: every error rollgym raises on purpose derives from `RollgymError`.

This module imports nothing, so every layer (tokenization, envs, rollouts) can root its own errors
here without depending on another layer. Builtin bases (`ValueError`, `RuntimeError`, ...) are kept
as mixins where callers used to catch them.
"""

from __future__ import annotations


class RollgymError(Exception):
    """Root of every error rollgym raises on purpose: `except rollgym.RollgymError` catches them all."""


class UsageError(RollgymError, ValueError):
    """rollgym was called with arguments or input it cannot use; the message says what to pass instead."""


class TokenizationError(RollgymError, RuntimeError):
    """The tokenization layer: templates, bridges, certification, trajectories."""


class EngineError(RollgymError, RuntimeError):
    """An inference engine failed; subclasses say who is at fault (request, server, network, output)."""


class EnvError(RollgymError):
    """An environment failed (its own bug, a bad task, an invalid reward or reply)."""


class SandboxError(EnvError, RuntimeError):
    """A sandbox operation failed for an infrastructure reason (daemon, container, image)."""


class ProxyError(RollgymError):
    """The recording proxy: a request it refuses, or an agent run through it that failed."""


class WorkerError(RollgymError):
    """A rollout worker (a Ray actor) could not start or died."""


class WorkerStartError(WorkerError):
    """A rollout actor could not start (its engine or environment could not be built); the run stops."""


class ClusterLostError(WorkerError):
    """Every rollout actor is gone and no new one can be placed; the output is left resumable."""


class WorkerDiedError(WorkerError):
    """A rollout worker that feeds a trainer stopped producing (it crashed, or hangs); the message names it and why."""


class ClusterConnectError(WorkerError):
    """The Ray cluster could not be reached or started within the timeout."""


__all__ = [
    "ClusterConnectError",
    "ClusterLostError",
    "EngineError",
    "EnvError",
    "ProxyError",
    "RollgymError",
    "SandboxError",
    "TokenizationError",
    "UsageError",
    "WorkerDiedError",
    "WorkerError",
    "WorkerStartError",
]
