"""Sandbox errors: infrastructure failures (`SandboxError`, from `rollgym.errors`) and their kinds."""

from __future__ import annotations

from rollgym.errors import EnvError, SandboxError, UsageError


class SandboxDeadError(SandboxError):
    """The sandbox's container is gone or stopped (killed, OOM, TTL expired, closed)."""


class DiskLimitError(SandboxDeadError):
    """The sandbox's commands wrote more than its disk budget and the container was stopped: the agent's
    doing, so its own error category (`disk`), never retried as an infrastructure failure."""

    category = "disk"


class HostUnavailableError(SandboxError):
    """A Docker host does not answer (refused, timed out): it is taken out of rotation for a while."""


class ImageError(SandboxError):
    """An image could not be found, pulled, built or bootstrapped."""


class ImageMissingError(ImageError):
    """A task's image is on no daemon and its registry does not serve it: the message names the image and the
    registry's answer. Found before the task's rollouts start (`Env.prepare_tasks`), an infrastructure failure."""


class UnsupportedRuntimeError(UsageError):
    """A container runtime rollgym does not run sandboxes on (yet), e.g. Apptainer or Kubernetes: the message names
    the runtimes it knows (runtime.py)."""


class FileNotInSandboxError(EnvError, FileNotFoundError):
    """A path asked of a live sandbox does not exist there (the agent's mistake, not the infrastructure's)."""


class DirectoryInSandboxError(EnvError, IsADirectoryError):
    """A file operation on a path that is a directory in the sandbox."""


__all__ = [
    "DirectoryInSandboxError",
    "DiskLimitError",
    "FileNotInSandboxError",
    "HostUnavailableError",
    "ImageError",
    "ImageMissingError",
    "SandboxDeadError",
    "SandboxError",
    "UnsupportedRuntimeError",
]
