"""Errors of OpenEnv servers: one that cannot be reached, started or that drops its session is infrastructure
(category `sandbox`, so resume runs the rollout again), never a reward of 0."""

from __future__ import annotations

from rollgym.errors import SandboxError


class OpenEnvServerError(SandboxError):
    """An OpenEnv server could not be reached or started, or closed its session mid-episode; the message says which
    server and why."""


class OpenEnvProtocolError(OpenEnvServerError):
    """The server answered something OpenEnv's protocol does not say (not JSON, an unknown message type)."""


__all__ = ["OpenEnvProtocolError", "OpenEnvServerError"]
