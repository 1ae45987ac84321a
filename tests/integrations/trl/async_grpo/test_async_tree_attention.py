"""TRL's AsyncGRPOTrainer on a CPU: rollgym's tree attention, run on TRL's own packed prefix tree, gives every sample
the logprobs a plain causal forward of that sample alone gives (what the trainer's loss reads)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rollgym as rg

pytestmark = pytest.mark.slow  # the real model, twice


@pytest.fixture(scope="module")
def tree_model():
    from transformers import AutoModelForCausalLM
    from trl.experimental.async_grpo import async_grpo_trainer

    from rollgym.engines.default_model import smollm2_dir

    assert rg.patch_async_grpo_for_cpu() and rg.patch_async_grpo_for_cpu()  # idempotent
    async_grpo_trainer.register_tree_attention()  # what the trainer calls when it is built
    return AutoModelForCausalLM.from_pretrained(str(smollm2_dir()), dtype=torch.float32, attn_implementation="tree_fa3")


def test_tree_attention_equals_each_sample_alone(tree_model, smollm2_fp32):
    from trl.experimental.async_grpo.packing import TreeRow

    prompt = [1, 4093, 198, 20234, 17, 2, 198, 1, 520, 9531, 198]
    samples = [prompt + [19556, 28, 849], prompt + [19556, 28, 416, 339], prompt[:6] + [724, 346, 1834, 30]]
    row = TreeRow()
    for i, ids in enumerate(samples):
        mask = [0] * 6 + [1] * (len(ids) - 6)
        row.add(
            {
                "input_ids": np.asarray(ids),
                "completion_mask": np.asarray(mask),
                "old_log_probs": np.zeros(len(ids), dtype=np.float32),
                "advantage": 1.0,
                "group_id": i,
            }
        )
    packed = row.pack()
    assert packed["input_ids"].numel() < sum(map(len, samples))  # the shared prefix is forwarded once
    with torch.inference_mode():
        logits = tree_model(
            input_ids=packed["input_ids"].unsqueeze(0),
            position_ids=packed["position_ids"].unsqueeze(0),
            tree_kv_index=packed["tree_kv_index"],
            tree_cu_seqlens_q=packed["tree_cu_seqlens_q"],
            tree_cu_seqlens_k=packed["tree_cu_seqlens_k"],
            tree_max_seqlen_q=int(packed["tree_max_seqlens"][0]),
            tree_max_seqlen_k=int(packed["tree_max_seqlens"][1]),
        ).logits[0]
        packed_lp = logits.log_softmax(-1)[packed["token_index"], packed["shift_labels"][packed["token_index"]]]
        alone = []
        for ids in samples:
            lp = smollm2_fp32(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
            alone += [lp[p - 1, ids[p]].item() for p in range(6, len(ids))]
        plain = tree_model(input_ids=torch.tensor([samples[1]])).logits[0].log_softmax(-1)  # no tree: plain causal
    assert len(alone) == packed_lp.numel()
    assert max(abs(a - b) for a, b in zip(packed_lp.tolist(), alone, strict=True)) < 1e-4
    ref = smollm2_fp32(input_ids=torch.tensor([samples[1]])).logits[0].log_softmax(-1)
    assert (plain - ref).abs().max().item() < 1e-4
