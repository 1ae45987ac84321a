"""Runs in ART's own venv (.ci/trainers-up art): rollgym's live hook inside ART's own gather. `art_rollout` episodes
sample through ART's own client (`art.Model(...).openai_client()`, `AsyncOpenAI`) from a vLLM-compatible server
(rollgym's vLLM stand-in on loopback, its ids drawn from SmolLM2's vocabulary), `art.gather_trajectory_groups` gathers
them (a row of an unknown environment raises into its group's `exceptions`), and ART's `tokenize_trajectory_groups`
reads the trajectories. Writes the server's requests and ART's rows as JSON for test_art_live_hook.py.

usage: python art_live_side.py MODEL_DIR OUT.json
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # ART imports litellm, which would fetch a price map

import asyncio
import json
import math
import sys
from pathlib import Path

import art
from art.preprocessing.tokenize import tokenize_trajectory_groups
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin
from transformers import AutoTokenizer

from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.art import chat_template_of
from rollgym.integrations.art.rollout_function import art_rollout
from rollgym.limits import Limits

SERVED = "smollm2-standin"


async def gather(model: art.Model, model_dir: str) -> list[art.TrajectoryGroup]:
    limits = Limits(max_turns=2, max_tokens_per_turn=16)
    tasks = CalculatorEnv.default_tasks(2, seed=21)
    groups = [
        art.TrajectoryGroup(
            art_rollout(model, "rollgym/Calculator-v0", task, tokenizer=model_dir, limits=limits) for _ in range(2)
        )
        for task in tasks
    ]
    groups.append(
        art.TrajectoryGroup([art_rollout(model, "rollgym/NoSuchEnv-v0", tasks[0], tokenizer=model_dir, limits=limits)])
    )
    return await art.gather_trajectory_groups(groups, max_exceptions=1, pbar_desc=None)


def main(model_dir: str, out: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    app, control = make_vllm_standin(SERVED, vocab_size=len(tokenizer), eos_token_id=eos, tokenizer=tokenizer)
    with LoopbackServer(app) as server:
        model = art.Model(
            name="rollgym-live",
            project="rollgym",
            inference_model_name=SERVED,
            inference_base_url=f"{server.base_url}/v1",
            inference_api_key="unused",
        )
        groups = asyncio.run(gather(model, model_dir))
    tokenizer.chat_template = chat_template_of(model_dir)  # ART's _internal_config["chat_template"]
    results = tokenize_trajectory_groups(
        tokenizer,
        groups,
        allow_training_without_logprobs=False,
        scale_rewards=True,
        shuffle_group_trajectories=False,
        drop_zero_advantage_trajectories=False,
        chat_template_tool_schema_format="vllm_openai",
    )
    rows = [
        {
            "token_ids": r.token_ids,
            "assistant_mask": r.assistant_mask,
            "logprobs": [None if math.isnan(v) else v for v in r.logprobs],
        }
        for r in results
    ]
    Path(out).write_text(
        json.dumps(
            {
                "groups": [
                    {"trajectories": len(g.trajectories), "exceptions": [e.message for e in g.exceptions]}
                    for g in groups
                ],
                "requests": control.requests,
                "rows": rows,
                "vocab_size": len(tokenizer),
                "eos": eos,
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
