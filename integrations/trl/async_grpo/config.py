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
        description="produce this many samples (a step's worth) per trainer version, `versions_ahead` versions "
        "ahead, then wait for the trainer: generation paced by training, nothing made to be dropped; None: no pace",
    )
    versions_ahead: int = Field(
        default=1,
        ge=1,
        description="with `samples_per_version`: how many steps' samples beyond the one in training may exist. TRL's "
        "data loader takes the next batch before it trains on the current one, so 1 makes generation and training "
        "take turns (synchronous RL) and 2 lets the next step's rollouts run while this one trains (asynchronous, "
        "staleness up to 2: give the trainer `max_staleness >= 2`)",
    )
    stop_timeout_s: float = Field(
        default=120.0, gt=0, description="how long `stop()` waits for the rollouts to release their environments"
    )
