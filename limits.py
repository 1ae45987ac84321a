"""`Limits`: when a rollout must stop, whatever the model does; the one source of budget defaults.

The Python API, `rollgym generate`, the TRL adapter and the recording proxy all take their defaults
from here, so a budget means the same thing everywhere. How to sample is `SamplingParams`' job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field

from rollgym.errors import UsageError
from rollgym.models import BoundaryModel

#: Model turns per rollout when nobody says otherwise.
DEFAULT_MAX_TURNS = 30
#: Sampled tokens per model turn (a request's `max_tokens`) when nobody says otherwise.
DEFAULT_MAX_TOKENS_PER_TURN = 1024
#: Wall-clock seconds per rollout when nobody says otherwise: a hung engine or tool ends the rollout as a
#: `timeout` instead of holding its slot for as long as the engine's own request timeout allows, turn after turn.
DEFAULT_TIMEOUT_S = 1800.0


class Limits(BoundaryModel):
    """Turn, token, context and time budgets of one rollout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1, description="model turns at most")
    max_tokens_per_turn: int = Field(
        default=DEFAULT_MAX_TOKENS_PER_TURN, ge=1, description="sampled tokens per turn at most"
    )
    max_total_tokens: int | None = Field(
        default=None, ge=1, description="sampled tokens over the whole rollout at most"
    )
    max_model_len: int | None = Field(default=None, ge=2, description="context size; default: the engine's")
    timeout_s: float | None = Field(
        default=DEFAULT_TIMEOUT_S, gt=0, description="wall-clock limit of the episode (tools included); None: no limit"
    )
    final_reward_timeout_s: float = Field(
        default=600.0, gt=0, description="time allowed to score an episode the loop cut short"
    )


def as_limits(limits: Limits | Mapping[str, Any] | None) -> Limits | None:
    """`limits` as a `Limits`: a dict of its fields is validated into one (a bad budget is a `UsageError` before any
    rollout, never a failure recorded on each); anything else is refused naming what was given."""
    if limits is None or isinstance(limits, Limits):
        return limits
    if isinstance(limits, Mapping):
        return Limits(**limits)
    raise UsageError(f"limits must be rg.Limits(...) or a dict of its fields, not {type(limits).__name__}")
