"""Sandboxes: the `Sandbox` protocol, `DockerSandbox`, images, the warm `SandboxPool`, leak prevention."""

from .daemon import docker_client, engine_available, ensure_engine
from .docker_sandbox import DockerSandbox, start_sandbox
from .images import base_image_name, bootstrap_base_image, build_image, build_image_from_dockerfile, ensure_image
from .lifecycle import RUN_ID, SandboxGroup, list_containers, prune
from .errors import DiskLimitError, FileNotInSandboxError, ImageError, SandboxDeadError, SandboxError
from .models import ExecResult, SandboxConfig
from .pool import SandboxPool
from .protocol import Sandbox

__all__ = [
    "DiskLimitError", "DockerSandbox", "ExecResult", "FileNotInSandboxError", "ImageError", "RUN_ID", "Sandbox",
    "SandboxConfig", "SandboxDeadError", "SandboxError", "SandboxGroup", "SandboxPool", "base_image_name",
    "bootstrap_base_image", "build_image", "build_image_from_dockerfile", "docker_client", "engine_available",
    "ensure_engine", "ensure_image", "list_containers", "prune", "start_sandbox",
]
