"""`rollgym export`: rollouts.jsonl -> Parquet with TRL-ready token columns, one row per training sample (one per
rollout, or one per sample of a rollout that `history="template"` split where the template rewrote history)."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.errors import UsageError
from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts


def export_rows(rollouts_path: str | Path, include_errored: bool = False) -> list[dict]:
    """Flat rows: ids, token view, reward and its components, metrics, and the message view as JSON."""
    rows = []
    for r in read_rollouts(rollouts_path):
        if r.error is not None and not include_errored:
            continue
        if not r.token_exact:
            continue  # a text-only trajectory has no ids to train on
        shared = {
            "id": r.id,
            "env_id": r.env_id,
            "task_id": r.task_id,
            "group_id": r.group_id,
            "sample_index": r.sample_index,
            "reward": r.reward,
            "stop_reason": r.stop_reason,
            "model": r.model,
            "history": r.history,
            "messages_json": json.dumps(r.messages(), ensure_ascii=False),
        }
        shared.update({f"reward_{k}": v for k, v in r.reward_components.items()})  # the names TRL's columns use
        shared.update({f"metric/{k}": v for k, v in r.metrics().items()})
        samples = r.samples()
        for k, sample in enumerate(samples):
            rows.append({**shared, **sample, "sample": k, "samples": len(samples)})
    return rows


def export_parquet(
    run_dir: str | Path, out: str | Path | None = None, include_errored: bool = False
) -> tuple[Path, int]:
    """Write `run_dir/rollouts.parquet` (or `out`); return its path and row count."""
    from datasets import Dataset

    run_dir = Path(run_dir)
    rows = export_rows(run_dir / ROLLOUTS_FILE, include_errored)
    if not rows:
        raise UsageError(
            f"no exportable rollouts in {run_dir / ROLLOUTS_FILE} (errored and non-token-exact ones are skipped)"
        )
    keys = sorted({k for row in rows for k in row})
    for row in rows:  # reward components/metrics differ between rollouts: fill the gaps
        for k in keys:
            row.setdefault(k, None)
    path = Path(out) if out else run_dir / "rollouts.parquet"
    Dataset.from_list(rows).to_parquet(str(path))
    return path, len(rows)
