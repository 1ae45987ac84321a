"""`rollgym export RUN --format slime`: stored rollouts as slime `Sample` fields, one JSON object per line."""

from __future__ import annotations

from pathlib import Path

from rollgym.integrations.slime.sample_fields import slime_samples
from rollgym.integrations.training_samples import stored_samples, write_jsonl


def export_slime(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    include_errored: bool = False,
    response_length: int | None = None,
) -> tuple[Path, int]:
    """Write `run_dir/slime.jsonl` (or `out`): `Sample(**row)` per line, with `status` given to `Sample.Status`."""
    rows = slime_samples(stored_samples(run_dir, include_errored), max_response=response_length)
    path = write_jsonl(Path(out) if out else Path(run_dir) / "slime.jsonl", rows)
    return path, len(rows)
