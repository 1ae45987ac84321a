"""Sandboxes: the `Sandbox` protocol, `DockerSandbox`, images, the warm `SandboxPool`, leak prevention,
placement over several Docker hosts (hosts.py)."""

from rollgym.envs.sandbox.daemon import (
    DEFAULT_HOST,
    client_for,
    configured_hosts,
    docker_client,
    engine_available,
    ensure_engine,
)
from rollgym.envs.sandbox.docker_sandbox import DockerSandbox, start_sandbox
from rollgym.envs.sandbox.errors import (
    DiskLimitError,
    FileNotInSandboxError,
    HostUnavailableError,
    ImageError,
    ImageMissingError,
    SandboxDeadError,
    SandboxError,
)
from rollgym.envs.sandbox.images import (
    base_image_name,
    bootstrap_base_image,
    build_image,
    build_image_from_dockerfile,
    ensure_image,
)
from rollgym.envs.sandbox.lifecycle import RUN_ID, ContainerRow, SandboxGroup, list_containers, list_sandboxes, prune
from rollgym.envs.sandbox.models import ExecResult, SandboxConfig, SandboxMount
from rollgym.envs.sandbox.pool import SandboxPool
from rollgym.envs.sandbox.protocol import Sandbox

__all__ = [
    "ContainerRow",
    "DEFAULT_HOST",
    "HostUnavailableError",
    "client_for",
    "configured_hosts",
    "list_sandboxes",
    "DiskLimitError",
    "DockerSandbox",
    "ExecResult",
    "FileNotInSandboxError",
    "ImageError",
    "ImageMissingError",
    "RUN_ID",
    "Sandbox",
    "SandboxConfig",
    "SandboxDeadError",
    "SandboxError",
    "SandboxGroup",
    "SandboxMount",
    "SandboxPool",
    "base_image_name",
    "bootstrap_base_image",
    "build_image",
    "build_image_from_dockerfile",
    "docker_client",
    "engine_available",
    "ensure_engine",
    "ensure_image",
    "list_containers",
    "prune",
    "start_sandbox",
]
