"""`rollgym export RUN --format art`: stored rollouts as ART `TrajectoryGroup` records, one JSON object per line, which
`load_trajectory_groups` (in ART's venv) turns into ART's own groups for `model.train`."""

from __future__ import annotations

from pathlib import Path

from rollgym.errors import UsageError
from rollgym.integrations.art.trajectory_record import group_records
from rollgym.integrations.training_samples import stored_rollouts, write_jsonl
from rollgym.rollouts.output import ROLLOUTS_FILE


def export_art(
    run_dir: str | Path, out: str | Path | None = None, *, include_errored: bool = False
) -> tuple[Path, int]:
    """Write `run_dir/art.jsonl` (or `out`): one group per line; errored rollouts only with `include_errored`, then in
    their group's `exceptions`, as ART's gather records a rollout that raised. Returns the path and trajectory count."""
    run_dir = Path(run_dir)
    rollouts = stored_rollouts(run_dir, include_errored)
    groups = group_records(rollouts)
    count = sum(len(g["trajectories"]) for g in groups)
    if not count:
        raise UsageError(f"no exportable rollouts in {run_dir / ROLLOUTS_FILE} (errored ones need --include-errored)")
    path = write_jsonl(Path(out) if out else run_dir / "art.jsonl", groups)
    return path, count
