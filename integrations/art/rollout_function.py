# pyright: reportMissingImports=false, reportAttributeAccessIssue=false
# (art is installed where ART trains, not in rollgym's own venv; without it pyright takes `art` for this room's folder)
"""`art_rollout`: rollgym's rollout loop as an ART rollout function, the live hook.

ART's training loop awaits user rollout functions, `async def rollout(model, scenario) -> art.Trajectory`, gathers
them per scenario into `art.TrajectoryGroup`s (`art.gather_trajectory_groups`) and calls `model.train(groups)`. This
one runs a rollgym episode whose every turn samples through ART's own client (`model.openai_client()`, `ArtEngine`),
so ART's weights and server stay in charge, and returns the trajectory with rollgym's exact ids (`trajectory_record`).
A failed rollout raises `RolloutFailedError`: ART's gather records it in the group's `exceptions` and trains the
group on the others (its `max_exceptions` decides when a step fails).
"""

from __future__ import annotations

from typing import Any

import art

from rollgym.engines.base import SamplingParams
from rollgym.errors import RollgymError
from rollgym.integrations.art.engine import ArtEngine
from rollgym.integrations.art.trajectory_groups import art_trajectory
from rollgym.integrations.art.trajectory_record import trajectory_record, unusable
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer
from rollgym.rollouts.records import Rollout


class RolloutFailedError(RollgymError, RuntimeError):
    """A rollgym episode ART asked for failed; the recorded rollout is `.rollout`."""

    def __init__(self, message: str, rollout: Rollout) -> None:
        super().__init__(message)
        self.rollout = rollout


async def art_rollout(
    model: art.Model,
    env: str,
    task: dict[str, Any],
    *,
    tokenizer: Any,
    chat_template: str | None = None,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    max_model_len: int | None = None,
) -> art.Trajectory:
    """One episode of `env` on `task` sampled by ART's `model` (its latest step); `tokenizer` is the model's (a
    directory, a Hugging Face tokenizer or a rollgym `ChatTokenizer`). Give ART the same template
    (`_internal_config={"chat_template": chat_template_of(tokenizer)}`), so its re-rendering of prompts and tool results
    gives rollgym's ids."""
    require_trainer("openpipe-art")
    engine = ArtEngine(model.openai_client(), model.get_inference_name(), max_model_len=max_model_len)
    policy = Policy(engine=engine, tokenizer=certified_tokenizer(tokenizer, chat_template=chat_template))
    rollout = await run_one(env, policy, task, limits=limits, sampling=sampling)
    reason = unusable(rollout)
    if reason is not None:
        raise RolloutFailedError(f"rollgym rollout {rollout.id} of {env} failed: {reason}", rollout)
    return art_trajectory(trajectory_record(rollout))
