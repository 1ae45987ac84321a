"""`rollgym export RUN --format skyrl`: stored rollouts as one SkyRL `GeneratorOutput` (JSON), responses cut at
`max_generate_length`, with each sample's GRPO group as its `trajectory_ids` entry."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.integrations.skyrl.generator_output import generator_output
from rollgym.integrations.training_samples import stored_samples


def export_skyrl(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    include_errored: bool = False,
    response_length: int | None = None,
) -> tuple[Path, int]:
    """Write `run_dir/skyrl.json` (or `out`): the `GeneratorOutput` of every sample, `trajectory_ids` as
    `{"instance_id": group, "repetition_id": k}` (SkyRL's `TrajectoryID` fields). Returns the path and sample count."""
    samples = stored_samples(run_dir, include_errored)
    seen: dict[str, int] = {}
    ids = []
    for s in samples:
        ids.append({"instance_id": s.group_id, "repetition_id": seen.get(s.group_id, 0)})
        seen[s.group_id] = seen.get(s.group_id, 0) + 1
    batch = generator_output(samples, max_response=response_length, trajectory_ids=ids)
    path = Path(out) if out else Path(run_dir) / "skyrl.json"
    path.write_text(json.dumps(batch, ensure_ascii=False))
    return path, len(samples)
