"""`rollgym export RUN --format verifiers`: stored rollouts as verifiers v1 `Episode` records (JSON lines, each with
one `Trace`), the form verifiers' `Episode.to_record` writes and `vf.WireEpisode` reads; needs no verifiers."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.errors import UsageError
from rollgym.integrations.verifiers.trace_record import episode_record
from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts


def export_verifiers(
    run_dir: str | Path, out: str | Path | None = None, *, include_errored: bool = False
) -> tuple[Path, int]:
    """Write `run_dir/verifiers.jsonl` (or `out`): one episode per rollout; errored rollouts only with
    `include_errored`, then as errored traces (`ok` false, `errors`, reward not scored). Returns the path and count."""
    run_dir = Path(run_dir)
    records = [
        episode_record(r, run_id=run_dir.name)
        for r in read_rollouts(run_dir / ROLLOUTS_FILE)
        if include_errored or r.error is None
    ]
    if not records:
        raise UsageError(f"no exportable rollouts in {run_dir / ROLLOUTS_FILE} (errored ones need --include-errored)")
    path = Path(out) if out else run_dir / "verifiers.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path, len(records)
