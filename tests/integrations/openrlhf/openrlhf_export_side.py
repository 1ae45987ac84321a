"""Runs in OpenRLHF's own venv (.ci/trainers-up openrlhf): `rollgym export --format openrlhf` (one executor output per
line) through OpenRLHF 0.11.2's own experience steps, as openrlhf_side.py runs the live hook's:
`SamplesGenerator._process_response_into_experience` per row, `RemoteExperienceMaker.split_rollout_samples` and
`compute_advantages_and_returns` (`group_norm`, two samples per prompt), with the modules that cannot load on this
CPU machine stubbed as that side stubs them. Writes JSON for the tests.

usage: python openrlhf_export_side.py OPENRLHF.jsonl MAX_LEN MODEL_DIR OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import torch
from openrlhf_side import args_for, stub_gpu_and_cluster_modules


def main() -> None:
    exported, max_len, model_dir, out = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    stub_gpu_and_cluster_modules()
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
    from transformers import AutoTokenizer

    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    strategy = SimpleNamespace(args=args_for(max_len, len(rows) // 2), is_rank_0=lambda: True)
    generator = SamplesGenerator.__new__(SamplesGenerator)
    generator.strategy, generator.args = strategy, strategy.args
    samples = [generator._process_response_into_experience(row, max_len=max_len) for row in rows]
    maker = RemoteExperienceMaker.__new__(RemoteExperienceMaker)
    maker.strategy, maker.args = strategy, strategy.args
    maker.tokenizer = AutoTokenizer.from_pretrained(model_dir)
    maker.kl_ctl, maker.advantage_estimator = SimpleNamespace(value=0.0), "group_norm"
    (batch,) = maker.split_rollout_samples(samples)
    batch.action_log_probs = batch.rollout_log_probs
    batch.kl = torch.zeros_like(batch.rollout_log_probs)  # no reference model
    (batch,) = maker.compute_advantages_and_returns([batch])
    result = {
        "rollout_ids": [row["rollgym"]["rollout_id"] for row in rows],
        "sequences": batch.sequences.tolist(),
        "attention_mask": batch.attention_mask.tolist(),
        "action_mask": batch.action_mask.tolist(),
        "rollout_log_probs": batch.rollout_log_probs.tolist(),
        "advantages": batch.advantages.tolist(),
    }
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
