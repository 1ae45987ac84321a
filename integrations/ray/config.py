"""`RayConfig`: where the rollout actors run and how many, what they are pinned to, and how faults are retried."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from rollgym.errors import UsageError
from rollgym.models import BoundaryModel


class RayConfig(BoundaryModel):
    """Boundary data for a distributed run (`run_rollouts(ray=RayConfig(...))`, `rollgym generate --ray`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = Field(
        default=None,
        description="None: start a local Ray instance sized by `actors`; "
        "'auto': the cluster this machine belongs to; 'ray://host:10001'; 'host:6379'",
    )
    actors: int | None = Field(
        default=None, ge=1, description="rollout actors (default: `workers`, or one per CPU of the cluster)"
    )
    resources: dict[str, float] = Field(
        default_factory=dict,
        description="custom resources each actor needs, e.g. {'docker': 1} pins actors to "
        "nodes started with --resources '{\"docker\": 1}'",
    )
    num_cpus: float = Field(default=1.0, ge=0, description="CPUs each actor reserves")
    max_retries: int = Field(default=1, ge=0, description="times a rollout held by a dead actor is run again elsewhere")
    connect_timeout_s: float = Field(
        default=30.0, gt=0, description="bound on reaching the cluster, and on placing a new actor"
    )
    start_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="actors not started by then (no room on the cluster) "
        "are left out; none started: `ClusterLostError`",
    )
    head_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="the cluster's head (its GCS) not accepting a connection for this "
        "long ends the run with `ClusterLostError` (keep it under Ray's "
        "own 60 s, after which Ray ends the driver process)",
    )
    keep_actors: bool = Field(default=False, description="keep the actors warm for the next call in this process")


def as_ray_config(ray: RayConfig | str | bool | None, workers: int = 1) -> RayConfig | None:
    """`run_rollouts(ray=...)`: a `RayConfig`, an address string, True (a local instance), or None/False (with
    `workers > 1`: that many actors on a local instance; else no Ray at all)."""
    if ray is None or ray is False:
        return RayConfig(actors=workers) if workers > 1 else None
    if ray is True:
        return RayConfig(actors=workers if workers > 1 else None)
    if isinstance(ray, str):
        return RayConfig(address=ray, actors=workers if workers > 1 else None)
    if isinstance(ray, RayConfig):
        return ray if ray.actors is not None or workers == 1 else ray.model_copy(update={"actors": workers})
    raise UsageError(f"ray= takes a RayConfig, an address string or True, got {type(ray).__name__}")
