"""Rollouts on a Ray cluster (or a local Ray instance): `run_rollouts(..., ray=...)` (`RayExecutor`), `rollgym generate --ray`.

Importing this package does not import Ray; Ray is imported when a run starts (the `ray` extra).
"""

from rollgym.errors import ClusterConnectError, ClusterLostError, WorkerError, WorkerStartError
from rollgym.integrations.ray.config import RayConfig, as_ray_config
from rollgym.integrations.ray.executor import RayExecutor

__all__ = [
    "ClusterConnectError",
    "ClusterLostError",
    "RayConfig",
    "RayExecutor",
    "WorkerError",
    "WorkerStartError",
    "as_ray_config",
]
