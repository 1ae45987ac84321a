"""`rollgym export RUN --format areal`: stored rollouts as AReaL trajectories (lists), one JSON object per line,
failed rollouts left out (AReaL rejects them)."""

from __future__ import annotations

from pathlib import Path

from rollgym.integrations.areal.episode_tensors import episode_rows
from rollgym.integrations.training_samples import stored_samples, write_jsonl


def export_areal(run_dir: str | Path, out: str | Path | None = None) -> tuple[Path, int]:
    """Write `run_dir/areal.jsonl` (or `out`): each trajectory's `episode_rows` with its GRPO group as `group_id`."""
    rows = [
        {"group_id": s.group_id, "rollout_id": s.rollout_id, **episode}
        for s in stored_samples(run_dir)
        if (episode := episode_rows(s)) is not None
    ]
    path = write_jsonl(Path(out) if out else Path(run_dir) / "areal.jsonl", rows)
    return path, len(rows)
