"""Errors of Harbor task folders, in the one error tree: a task rollgym refuses, and a verification that gave no
reward (the task's fault, a time-out, or the infrastructure's), each with the category its rollouts are recorded as."""

from __future__ import annotations

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.errors import EnvError, SandboxError


class UnsupportedTaskError(InvalidTaskError):
    """A Harbor task using a feature rollgym does not run (yet): the message names the feature and the task."""


class RewardFileError(EnvError):
    """`tests/test.sh` left no usable reward: the reward file is missing, empty, not a number, or not finite. The
    task's fault (`task_error`), never a silent 0."""


class VerifierTimeoutError(EnvError):
    """`tests/test.sh` ran past `[verifier] timeout_sec` and was killed: recorded as a `timeout`, not a reward."""

    category = "timeout"


class VerifierInfraError(SandboxError):
    """The verification could not run (the sandbox died, the tests could not be copied in): an infrastructure
    failure, retried on resume, never trained on."""
