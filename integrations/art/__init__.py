"""ART (OpenPipe's Agent Reinforcement Trainer, `openpipe-art` 0.5.18) in one room.

- `trajectory_record`, `group_records`: rollouts as the records of ART's `Trajectory` / `TrajectoryGroup` (exact
  sampled ids and logprobs in `Choice` logprobs, "token_id:<id>"), in plain Python;
- `export_art`: `rollgym export RUN --format art`; `chat_template_of`: the template to give ART;
- in ART's venv only (they import `art`): `trajectory_groups.load_trajectory_groups` (the export as ART's own
  groups) and `rollout_function.art_rollout`, the live hook, sampling through ART's `model.openai_client()`.
"""

from rollgym.integrations.art.chat_template import chat_template_of
from rollgym.integrations.art.engine import ArtEngine
from rollgym.integrations.art.export import export_art
from rollgym.integrations.art.trajectory_record import choice_record, group_records, trajectory_record

__all__ = ["ArtEngine", "chat_template_of", "choice_record", "export_art", "group_records", "trajectory_record"]
