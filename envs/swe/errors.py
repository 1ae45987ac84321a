"""Errors of the SWE environment's task rows, rooted in the one error tree (`InvalidTaskError`)."""

from __future__ import annotations

from rollgym.envs.core.errors import InvalidTaskError


class SdistNotFoundError(InvalidTaskError, FileNotFoundError):
    """A row's `env_spec.sdist` is not where it resolves to; the message names the path tried and the task file."""


class WrongBaseCommitError(InvalidTaskError):
    """A row's `base_commit` is not what its image's repository holds; the message (one line) gives the right one."""

    def __init__(self, message: str, head: str) -> None:
        super().__init__(message)
        self.head = head  # the repository's HEAD: what the row's base_commit should say


__all__ = ["CheckoutError", "InvalidTaskError", "SdistNotFoundError", "WrongBaseCommitError"]


class CheckoutError(InvalidTaskError):
    """A task cannot be checked out on the host: no bundled sdist, a bug patch that does not apply, or git failing."""
