"""A verifiers taskset with the real SmolLM2-135M in rollgym's loop: whatever the model writes, the rollout is scored
by the task's own reward, and its tokens replay exactly: each sampled id's logprob is the model's own under the whole
recorded sequence (teacher-forced in float32), the environment's ids carry none."""

from __future__ import annotations

import pytest
from support.vllm import assert_token_exact

import rollgym as rg
from rollgym.engines import SamplingParams

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed: pip install 'rollgym[verifiers]'")


from vf_tasksets import ArithmeticTaskset, taskset  # noqa: E402  # isort: skip  # imported after the skip above: it needs verifiers


@pytest.mark.slow
async def test_the_real_small_model_plays_a_verifiers_taskset_token_exact(tool_tok, smollm2_fp32):
    from rollgym.engines.transformers_engine import TransformersEngine

    ts = taskset(ArithmeticTaskset)
    engine = TransformersEngine("smollm2-135m")
    try:
        rollouts = await rg.run_rollouts(
            "verifiers/env-v0",
            [{"index": 0}, {"index": 1}],
            rg.Policy(engine=engine, tokenizer=tool_tok),
            env_kwargs={"environment": ts},
            limits=rg.Limits(max_turns=2, max_tokens_per_turn=24),
            sampling=SamplingParams(seed=0, temperature=1.0),
        )
    finally:
        await engine.aclose()
    for rollout in rollouts:
        assert rollout.error is None or rollout.error.category != "environment", rollout.error
        assert rollout.model == "smollm2-135m" and rollout.turns
        assert rollout.reward == rollout.reward_components["correct"] in (0.0, 1.0)
        assert '"name": "calculator_calculate"' in tool_tok.decode(rollout.prompt_ids)
        assert_token_exact(rollout, smollm2_fp32)
