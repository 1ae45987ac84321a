"""`rollgym export RUN --format verl`: stored rollouts as `AgentLoopOutput` rows (JSON lines), fitted to verl's
prompt and response lengths, each with its GRPO group (`uid`)."""

from __future__ import annotations

from pathlib import Path

from rollgym.integrations.training_samples import stored_samples, write_jsonl
from rollgym.integrations.verl.agent_loop_output import verl_rows


def export_verl(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    include_errored: bool = False,
    prompt_length: int | None = None,
    response_length: int | None = None,
) -> tuple[Path, int]:
    """Write `run_dir/verl.jsonl` (or `out`): one `AgentLoopOutput` per line (`AgentLoopOutput(**row)` minus `uid`);
    errored rollouts only with `include_errored`, then fully masked with reward 0. Returns the path and row count."""
    samples = stored_samples(run_dir, include_errored)
    rows = verl_rows(samples, prompt_length=prompt_length, response_length=response_length)
    path = write_jsonl(Path(out) if out else Path(run_dir) / "verl.jsonl", rows)
    return path, len(rows)
