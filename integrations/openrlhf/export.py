"""`rollgym export RUN --format openrlhf`: stored rollouts as OpenRLHF agent-executor outputs (JSON lines), fitted to
its `max_len`, each GRPO group's samples together."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.errors import UsageError
from rollgym.integrations.openrlhf.executor_output import openrlhf_rows
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts


def export_openrlhf(
    run_dir: str | Path, out: str | Path | None = None, *, include_errored: bool = False, max_length: int | None = None
) -> tuple[Path, int]:
    """Write `run_dir/openrlhf.jsonl` (or `out`): one executor output per line, the dict an `AgentExecutor` returns
    (OpenRLHF's `_process_response_into_experience` reads it as it is); errored rollouts only with
    `include_errored`, then with no action range and reward 0. Returns the path and row count."""
    run_dir = Path(run_dir)
    samples = [
        s
        for r in read_rollouts(run_dir / ROLLOUTS_FILE)
        if include_errored or r.error is None
        for s in training_samples(r)
    ]
    if not samples:
        raise UsageError(f"no exportable rollouts in {run_dir / ROLLOUTS_FILE} (errored ones need --include-errored)")
    rows = openrlhf_rows(samples, max_length=max_length)
    path = Path(out) if out else run_dir / "openrlhf.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path, len(rows)
