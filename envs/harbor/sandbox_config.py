"""A Harbor task's sandbox settings: its image, working directory, `[environment]` resources and env, its network."""

from __future__ import annotations

from typing import Any

import docker

from rollgym.envs.harbor.folders import HarborTask
from rollgym.envs.sandbox.daemon import docker_client


def image_workdir(image: str, client: docker.DockerClient | None = None) -> str:
    """The image's WORKDIR (where Harbor's agent starts), "/" when it sets none."""
    config = (client or docker_client()).images.get(image).attrs.get("Config") or {}
    return config.get("WorkingDir") or "/"


def task_sandbox(task: HarborTask) -> dict[str, Any]:
    """SandboxConfig fields from task.toml: cpus, memory_mb (else memory), storage_mb (else storage), env, workdir,
    and the network: the Docker bridge only when the task's network_mode is public (see `agent_network`)."""
    env = task.config.environment
    out: dict[str, Any] = {
        "task_id": task.task_id,
        "network_mode": "bridge" if task.config.agent_network() == "public" else "none",
    }
    if env.cpus:
        out["cpus"] = float(env.cpus)
    if env.memory_mb:
        out["mem_limit"] = f"{env.memory_mb}m"
    if env.storage_mb:
        out["disk_limit"] = f"{env.storage_mb}m"
    if env.env:
        out["env"] = dict(env.env)
    if env.workdir:
        out["workdir"] = env.workdir
    return out
