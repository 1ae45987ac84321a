"""Rollouts on a Ray cluster (or a local Ray instance): `run_rollouts(..., ray=...)`, `rollgym generate --ray`.

Importing this package does not import Ray; Ray is imported when a run starts (the `ray` extra).
"""

from rollgym.errors import ClusterConnectError, ClusterLostError, WorkerError, WorkerStartError

from .config import RayConfig, as_ray_config

__all__ = ["ClusterConnectError", "ClusterLostError", "RayConfig", "WorkerError", "WorkerStartError", "as_ray_config"]
