"""Runs in verl's own venv (.ci/trainers-up verl): `rollgym export --format verl` (one `AgentLoopOutput` per line)
through verl 0.9.1's own agent-loop worker steps, as verl_side.py runs the live hook's: `AgentLoopOutput(**row)`,
the worker's `_agent_loop_postprocess` (padding, masks, position ids) and `_postprocess` (the batch and its
`rm_scores`), then `compute_grpo_outcome_advantage` grouped by each row's `uid`. Writes JSON for the tests.

usage: python verl_export_side.py VERL.jsonl WORKDIR MODEL_DIR OUT.json
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, AgentLoopWorker
from verl.trainer.ppo import core_algos
from verl_side import config


async def batch_of(worker: AgentLoopWorker, rows: list[dict]):
    outputs = []
    for row in rows:
        fields = {k: v for k, v in row.items() if k != "uid"}
        outputs.append(await worker._agent_loop_postprocess(AgentLoopOutput(**fields), False, raw_prompt=[]))
    return worker._postprocess(outputs)


def main() -> None:
    exported, workdir, model_dir, out = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    worker = AgentLoopWorker(config(workdir, model_dir), llm_client=None)
    gen = asyncio.run(batch_of(worker, rows))
    advantages, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=gen.batch["rm_scores"],
        response_mask=gen.batch["response_mask"],
        index=np.array([row["uid"] for row in rows], dtype=object),
    )
    result = {
        "rollout_ids": [row["extra_fields"]["rollgym_rollout_id"] for row in rows],
        "prompts": gen.batch["prompts"].tolist(),
        "responses": gen.batch["responses"].tolist(),
        "response_mask": gen.batch["response_mask"].tolist(),
        "rollout_log_probs": gen.batch["rollout_log_probs"].tolist(),
        "rm_scores": gen.batch["rm_scores"].tolist(),
        "advantages": advantages.tolist(),
    }
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
