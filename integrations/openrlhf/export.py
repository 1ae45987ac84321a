"""`rollgym export RUN --format openrlhf`: stored rollouts as OpenRLHF agent-executor outputs (JSON lines), fitted to
its `max_len`, each GRPO group's samples together."""

from __future__ import annotations

from pathlib import Path

from rollgym.integrations.openrlhf.executor_output import openrlhf_rows
from rollgym.integrations.training_samples import stored_samples, write_jsonl


def export_openrlhf(
    run_dir: str | Path, out: str | Path | None = None, *, include_errored: bool = False, max_length: int | None = None
) -> tuple[Path, int]:
    """Write `run_dir/openrlhf.jsonl` (or `out`): one executor output per line, the dict an `AgentExecutor` returns
    (OpenRLHF's `_process_response_into_experience` reads it as it is); errored rollouts only with
    `include_errored`, then with no action range and reward 0. Returns the path and row count."""
    run_dir = Path(run_dir)
    samples = stored_samples(run_dir, include_errored)
    rows = openrlhf_rows(samples, max_length=max_length)
    path = write_jsonl(Path(out) if out else run_dir / "openrlhf.jsonl", rows)
    return path, len(rows)
