"""`rollgym export RUN --format verifiers`: stored rollouts as verifiers v1 `Episode` records (JSON lines, each with
one `Trace`), the form verifiers' `Episode.to_record` writes and `vf.WireEpisode` reads; needs no verifiers."""

from __future__ import annotations

from pathlib import Path

from rollgym.integrations.training_samples import stored_rollouts, write_jsonl
from rollgym.integrations.verifiers.trace_record import episode_record


def export_verifiers(
    run_dir: str | Path, out: str | Path | None = None, *, include_errored: bool = False
) -> tuple[Path, int]:
    """Write `run_dir/verifiers.jsonl` (or `out`): one episode per rollout; errored rollouts only with
    `include_errored`, then as errored traces (`ok` false, `errors`, reward not scored). Returns the path and count."""
    run_dir = Path(run_dir)
    records = [episode_record(r, run_id=run_dir.name) for r in stored_rollouts(run_dir, include_errored)]
    path = write_jsonl(Path(out) if out else run_dir / "verifiers.jsonl", records)
    return path, len(records)
