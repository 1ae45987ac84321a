# pyright: reportMissingImports=false
# (verifiers is installed where verifiers reads these episodes, not in rollgym's own venv)
"""rollgym rollouts as verifiers' own objects (`vf.Episode`, `vf.Trace`), built by verifiers' own validation from the
records `trace_record` writes; imports verifiers (0.4), so only a venv that has it calls this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.verifiers.trace_record import episode_record
from rollgym.rollouts.records import Rollout

if TYPE_CHECKING:
    from verifiers.v1 import WireEpisode


def verifiers_episode(rollout: Rollout, *, run_id: str = "rollgym") -> WireEpisode:
    """The rollout as a `vf.WireEpisode` (the loader verifiers gives trainers) holding one `Trace`; a verifiers outside
    the tested range is refused, naming the range."""
    require_trainer("verifiers")
    from verifiers.v1 import WireEpisode

    return WireEpisode.model_validate(episode_record(rollout, run_id=run_id))


def load_episodes(lines: list[str] | list[dict[str, Any]]) -> list[WireEpisode]:
    """Episodes read back from `rollgym export --format verifiers` (JSON lines or their parsed dicts)."""
    require_trainer("verifiers")
    from verifiers.v1 import WireEpisode

    return [WireEpisode.model_validate_json(x) if isinstance(x, str) else WireEpisode.model_validate(x) for x in lines]
