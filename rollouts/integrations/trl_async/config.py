"""`AsyncRolloutConfig`: how `rg.AsyncRolloutWorker` produces samples for an asynchronous trainer."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from rollgym.models import BoundaryModel


class AsyncRolloutConfig(BoundaryModel):
    """Boundary data for `rg.AsyncRolloutWorker(..., config=...)` (or the same names as keyword arguments)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_generations: int = Field(default=8, ge=1, description="rollouts per task: one GRPO group, pushed together")
    concurrency: int = Field(default=16, ge=1, description="rollouts running at once, over all groups")
    max_staleness: int | None = Field(
        default=None,
        ge=0,
        description="how many versions behind the trainer's a sample's oldest token may be when it is pushed; "
        "None: no bound here (the trainer drops what exceeds its own `max_staleness`)",
    )
    stale: Literal["drop", "keep"] = Field(
        default="drop", description="a finished sample over `max_staleness`: drop it or push it anyway (counted)"
    )
    restart_stale: bool = Field(
        default=True,
        description="abort a running rollout as soon as its oldest token goes over `max_staleness` (its "
        "environment released, what it did written to `out`), and run it again from the start",
    )
    queue_maxsize: int = Field(default=0, ge=0, description="samples waiting for the trainer at most (0: no bound)")
    samples_per_version: int | None = Field(
        default=None,
        ge=1,
        description="synchronous RL with the same worker: this many samples (a step's worth) per trainer version, "
        "one step ahead (TRL's data loader fetches a batch before training on the one before), then wait for the "
        "next version, so generation and training take turns; None: asynchronous",
    )
    stop_timeout_s: float = Field(
        default=120.0, gt=0, description="how long `stop()` waits for the rollouts to release their environments"
    )
