"""Runs in ART's own venv (.ci/trainers-up art): openpipe-art 0.5.18 takes `rollgym export --format art` as its own
`TrajectoryGroup`s (rollgym's loader, validated by ART's pydantic models), tokenizes them with the function its
LocalBackend trains through (`tokenize_trajectory_groups`, tokenizer SmolLM2's with the chat template rollgym rendered
with, as ART's `_internal_config["chat_template"]` sets it, and tools in vLLM's OpenAI order), packs them (`packed_tensors_from_tokenized_results`) and
computes its loss (`art.loss.loss_fn`) with SmolLM2's own logprobs of the packed tokens. Writes JSON for
test_art_own_code.py.

usage: python art_side.py ART.jsonl TEMPLATE_FILE MODEL_DIR OUT.json
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # ART imports litellm, which would fetch a price map

import json
import math
import sys
from importlib.metadata import version
from pathlib import Path

import art
import torch
from art.loss import loss_fn
from art.preprocessing.pack import packed_tensors_from_tokenized_results
from art.preprocessing.tokenize import tokenize_trajectory_groups
from transformers import AutoModelForCausalLM, AutoTokenizer

from rollgym.integrations.art.trajectory_groups import load_trajectory_groups

#: ART's `_internal_config["chat_template_tool_schema_format"]`: tools as vLLM's OpenAI server renders them, keys in
#: OpenAI's order (ART's pydantic `Tools` reorders them otherwise), which is how rollgym renders them too
TOOL_SCHEMA = "vllm_openai"


def nan_to_none(values):
    return [None if math.isnan(v) else v for v in values]


def new_logprobs(model, packed) -> torch.Tensor:
    """What ART's trainer computes: logprob of token j + 1 at position j, per unpacked row (0 past its end)."""
    tokens = packed["tokens"]
    out = torch.zeros(tokens.shape, dtype=torch.float32)
    for b in range(tokens.shape[0]):
        n = int((packed["group_ids"][b] != -1).sum())
        with torch.no_grad():
            logits = model(tokens[b : b + 1, :n]).logits[0].float()
        out[b, : n - 1] = torch.log_softmax(logits[:-1], -1).gather(1, tokens[b, 1:n, None])[:, 0]
    return out


def main(exported: str, template_file: str, model_dir: str, out: str) -> None:
    groups = load_trajectory_groups(exported)
    assert all(isinstance(g, art.TrajectoryGroup) for g in groups)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.chat_template = Path(template_file).read_text()  # what ART's _apply_configured_chat_template does
    results = list(
        tokenize_trajectory_groups(
            tokenizer,
            groups,
            allow_training_without_logprobs=False,
            scale_rewards=True,
            shuffle_group_trajectories=False,
            drop_zero_advantage_trajectories=False,
            chat_template_tool_schema_format=TOOL_SCHEMA,
        )
    )
    kept_by_default = sum(
        1
        for _ in tokenize_trajectory_groups(
            tokenizer,
            groups,
            False,
            True,
            shuffle_group_trajectories=False,
            chat_template_tool_schema_format=TOOL_SCHEMA,
        )
    )
    rows, seen = [], {}
    for r in results:
        rid = r.trajectory.metadata["rollgym_rollout_id"]
        history = seen[rid] = seen.get(rid, -1) + 1
        rows.append(
            {
                "rollout_id": rid,
                "history": history,
                "token_ids": r.token_ids,
                "assistant_mask": r.assistant_mask,
                "logprobs": nan_to_none(r.logprobs),
                "advantage": r.advantage,
                "weight": r.weight,
                "reward": r.trajectory.reward,
                "policy_versions": [r.trajectory.initial_policy_version, r.trajectory.final_policy_version],
            }
        )
    seq_len = max(len(r.token_ids) for r in results)
    packed = packed_tensors_from_tokenized_results(
        results, seq_len, pad_token_id=tokenizer.eos_token_id, pack_results=False, verbosity=0
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    new = new_logprobs(model, packed)
    inputs = {k: v for k, v in packed.items() if isinstance(v, torch.Tensor)}
    loss = loss_fn(inputs, new, None, None, {})  # ART's default experimental config
    Path(out).write_text(
        json.dumps(
            {
                "art": version("openpipe-art"),
                "groups": [
                    {
                        "trajectories": [t.metadata["rollgym_rollout_id"] for t in g.trajectories],
                        "exceptions": [e.message for e in g.exceptions],
                    }
                    for g in groups
                ],
                "rows": rows,
                "kept_by_default": kept_by_default,
                "packed_rows": int(packed["tokens"].shape[0]),
                "packed_trainable": int(packed["assistant_mask"].sum()),
                "packed_advantages_finite": bool(torch.isfinite(packed["advantages"]).all()),
                "new_logprobs": [nan_to_none(row) for row in new.tolist()],
                "packed_tokens": packed["tokens"].tolist(),
                "packed_old_logprobs": [nan_to_none(row) for row in packed["logprobs"].tolist()],
                "loss": float(loss.policy_loss),
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
