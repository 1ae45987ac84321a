"""Runs in SkyRL's own venv (.ci/trainers-up skyrl): `rollgym export --format skyrl` (one `GeneratorOutput`) through
SkyRL 0.4.0's own trainer steps, as skyrl_side.py runs the live hook's: `validate_generator_output`,
`RayPPOTrainer.postprocess_generator_output` and `convert_to_training_input` (on SkyRL's default config), GRPO
`compute_advantages_and_returns` grouped by each trajectory's `instance_id`, and `ppo_policy_loss`. Writes JSON for
the tests to check against rollgym's records.

usage: python skyrl_export_side.py SKYRL.json TOKENIZER_DIR OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from skyrl.backends.skyrl_train.utils import ppo_utils
from skyrl.train.config.config import SkyRLTrainConfig
from skyrl.train.generators.base import TrajectoryID
from skyrl.train.trainer import RayPPOTrainer
from skyrl.train.utils.trainer_utils import validate_generator_output
from transformers import AutoTokenizer


def main() -> None:
    exported, tokenizer_dir, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    output = json.loads(exported.read_text())
    output["trajectory_ids"] = [TrajectoryID(**t) for t in output["trajectory_ids"]]
    rows = len(output["response_ids"])
    validate_generator_output(rows, output)
    uids = [t.instance_id for t in output["trajectory_ids"]]
    cfg = SkyRLTrainConfig()
    prompts = len(dict.fromkeys(uids))  # one GRPO group per prompt, each `n_samples_per_prompt` rows
    cfg.generator.n_samples_per_prompt = rows // prompts
    cfg.trainer.train_batch_size = cfg.trainer.policy_mini_batch_size = prompts
    trainer = object.__new__(RayPPOTrainer)  # SkyRL's own conversion steps, on its default config
    trainer.cfg, trainer.all_metrics = cfg, {}
    trainer.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    trainer.dispatch = SimpleNamespace(get_lcm_dp_size=lambda: 1)  # one data-parallel rank: no padding rows
    output, uids = trainer.postprocess_generator_output(output, uids)
    batch = trainer.convert_to_training_input(output, uids)
    advantages, _ = ppo_utils.compute_advantages_and_returns(
        token_level_rewards=batch["rewards"],
        response_mask=batch["response_mask"],
        index=np.array(uids),
        adv_estimator="grpo",
        config=cfg.trainer.algorithm,
    )
    loss, _ = ppo_utils.ppo_policy_loss(
        batch["rollout_logprobs"],
        batch["rollout_logprobs"],
        advantages,
        cfg.trainer.algorithm,
        loss_mask=batch["loss_mask"],
        rollout_logprobs=batch["rollout_logprobs"],
    )
    result = {
        "trajectory_ids": [[t.instance_id, t.repetition_id] for t in output["trajectory_ids"]],
        "sequences": batch["sequences"].tolist(),
        "loss_mask": batch["loss_mask"].tolist(),
        "rollout_logprobs": batch["rollout_logprobs"].tolist(),
        "advantages": advantages.tolist(),
        "loss": float(loss),
    }
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
