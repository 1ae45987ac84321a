"""TransformersEngine on the real SmolLM2-135M: seeds, processed logprobs, stop ids, batching."""

from __future__ import annotations

import asyncio

import pytest
import torch
from transformers import DynamicCache  # noqa: F401 - the engine's cache type must exist in this transformers
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from rollgym.engines.base import Engine, SamplingParams
from rollgym.engines.errors import BadRequestError, ContextOverflowError, EngineError, InvalidOutputError
from rollgym.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.slow


def teacher_forced_logprobs(model, prompt, completion, sampling: SamplingParams) -> list[float]:
    """Recompute each completion id's logprob with one full forward pass and transformers' own warpers."""
    ids = torch.tensor([prompt + completion])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    out = []
    for pos, token in enumerate(completion):
        scores = logits[pos : pos + 1].clone()
        if sampling.temperature > 0:
            scores = TemperatureLogitsWarper(sampling.temperature)(ids, scores)
            if sampling.top_k:
                scores = TopKLogitsWarper(sampling.top_k)(ids, scores)
            if sampling.top_p < 1.0:
                scores = TopPLogitsWarper(sampling.top_p)(ids, scores)
        out.append(scores.log_softmax(-1)[0, token].item())
    return out


def test_engine_satisfies_the_protocol(smollm2_engine):
    assert isinstance(smollm2_engine, Engine)
    assert smollm2_engine.token_exact is True
    assert smollm2_engine.max_model_len == 8192
    assert 2 in smollm2_engine.eos_token_ids  # SmolLM2's <|im_end|>/eos id from generation_config


async def test_seed_makes_sampling_deterministic(smollm2_engine, prompts):
    sampling = SamplingParams(temperature=1.0, max_tokens=8, seed=1234)
    first = await smollm2_engine.generate(prompts[0], sampling)
    again = await smollm2_engine.generate(prompts[0], sampling)
    other = await smollm2_engine.generate(prompts[0], sampling.model_copy(update={"seed": 99}))
    assert first.completion_ids == again.completion_ids
    assert first.logprobs == pytest.approx(again.logprobs, abs=1e-5)
    assert other.completion_ids != first.completion_ids
    assert first.engine == "transformers" and first.model == "smollm2-135m" and first.prompt_len == len(prompts[0])


@pytest.mark.parametrize(
    "sampling",
    [
        SamplingParams(temperature=1.0, max_tokens=6, seed=7),
        SamplingParams(temperature=0.7, top_k=20, top_p=0.9, max_tokens=6, seed=11),
        SamplingParams(temperature=1.3, top_p=0.8, max_tokens=6, seed=5),
        SamplingParams(temperature=0.0, max_tokens=6),
    ],
    ids=["plain", "temp-topk-topp", "hot-topp", "greedy"],
)
async def test_logprobs_equal_teacher_forced_recomputation(smollm2_engine, prompts, sampling):
    gen = await smollm2_engine.generate(prompts[1], sampling)
    assert len(gen.completion_ids) == len(gen.logprobs) >= 1
    expected = teacher_forced_logprobs(smollm2_engine._model, prompts[1], gen.completion_ids, sampling)
    assert gen.logprobs == pytest.approx(expected, abs=1e-4)


async def test_mixed_sampling_in_one_batch_keeps_each_rows_processing(smollm2_engine, prompts):
    """Rows of one batch with different temperature/top-k/top-p each report their own processed logprobs."""
    configs = [
        SamplingParams(temperature=0.6, top_k=10, max_tokens=5, seed=1),
        SamplingParams(temperature=1.4, top_p=0.7, max_tokens=5, seed=2),
        SamplingParams(temperature=0.0, max_tokens=5),
    ]
    gens = await asyncio.gather(*(smollm2_engine.generate(p, s) for p, s in zip(prompts[:3], configs, strict=True)))
    for prompt, sampling, gen in zip(prompts[:3], configs, gens, strict=True):
        expected = teacher_forced_logprobs(smollm2_engine._model, prompt, gen.completion_ids, sampling)
        assert gen.logprobs == pytest.approx(expected, abs=1e-4)


async def test_processed_logprobs_differ_from_raw_when_processing_applies(smollm2_engine, prompts):
    """Guard against reporting raw logprobs: with temperature 0.5 they must differ from T=1 recomputation."""
    sampling = SamplingParams(temperature=0.5, max_tokens=4, seed=3)
    gen = await smollm2_engine.generate(prompts[0], sampling)
    raw = teacher_forced_logprobs(
        smollm2_engine._model, prompts[0], gen.completion_ids, SamplingParams(temperature=1.0)
    )
    assert max(abs(a - b) for a, b in zip(gen.logprobs, raw, strict=True)) > 1e-3


async def test_stop_token_ids_are_honoured(smollm2_engine, prompts):
    greedy = SamplingParams(temperature=0.0, max_tokens=8)
    free = await smollm2_engine.generate(prompts[1], greedy)
    stop_id = free.completion_ids[2]
    first_at = free.completion_ids.index(stop_id)
    stopped = await smollm2_engine.generate(prompts[1], greedy.model_copy(update={"stop_token_ids": [stop_id]}))
    assert stopped.finish_reason == "stop"
    assert stopped.stop_token_id == stop_id
    assert stopped.completion_ids == free.completion_ids[: first_at + 1]  # stop id kept last, like vLLM
    assert stopped.logprobs == pytest.approx(free.logprobs[: first_at + 1], abs=1e-5)


async def test_max_tokens_ends_with_length(smollm2_engine, prompts):
    gen = await smollm2_engine.generate(prompts[2], SamplingParams(temperature=0.0, max_tokens=3))
    assert gen.finish_reason == "length" and len(gen.completion_ids) == 3 and gen.stop_token_id is None


async def test_batched_greedy_equals_one_at_a_time(smollm2_engine, prompts):
    greedy = SamplingParams(temperature=0.0, max_tokens=6)
    alone = [await smollm2_engine.generate(p, greedy) for p in prompts]
    together = await asyncio.gather(*(smollm2_engine.generate(p, greedy) for p in prompts))
    for a, b in zip(alone, together, strict=True):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        assert a.finish_reason == b.finish_reason


async def test_seeded_request_does_not_depend_on_batch_neighbours(smollm2_engine, prompts):
    seeded = SamplingParams(temperature=1.0, max_tokens=6, seed=42)
    alone = await smollm2_engine.generate(prompts[3], seeded)
    together = await asyncio.gather(
        smollm2_engine.generate(prompts[0], SamplingParams(temperature=1.0, max_tokens=6)),
        smollm2_engine.generate(prompts[3], seeded),
        smollm2_engine.generate(prompts[1], SamplingParams(temperature=0.0, max_tokens=2)),
    )
    assert together[1].completion_ids == alone.completion_ids


async def test_concurrent_requests_share_a_batch(smollm2_engine, prompts):
    """Requests sent together run as one batch; requests arriving during a batch form the next one."""
    engine = TransformersEngine(smollm2_engine._model, model_name="batching")
    greedy = SamplingParams(temperature=0.0, max_tokens=2)
    gens = await asyncio.gather(*(engine.generate(p, greedy) for p in prompts))
    assert engine.batches_run == 1
    assert max(g.timings.queued_s for g in gens) < min(g.timings.generate_s for g in gens)
    first = asyncio.ensure_future(engine.generate(prompts[1], SamplingParams(temperature=0.0, max_tokens=6)))
    while engine.batches_run < 2:
        await asyncio.sleep(0.005)
    late = await asyncio.gather(*(engine.generate(p, greedy) for p in prompts[:3]))  # arrive while `first` runs
    await first
    assert engine.batches_run == 3  # the three late requests shared one batch
    assert min(g.timings.queued_s for g in late) > 0
    await engine.aclose()


async def test_context_limit_ends_with_length(smollm2_engine, prompts):
    small = TransformersEngine(smollm2_engine._model, max_model_len=len(prompts[0]) + 3, model_name="tiny-context")
    gen = await small.generate(prompts[0], SamplingParams(temperature=0.0, max_tokens=50))
    assert gen.finish_reason == "length" and len(gen.completion_ids) == 3
    with pytest.raises(ContextOverflowError, match="context is"):
        await small.generate(list(prompts[0]) + [1, 2, 3], SamplingParams(max_tokens=1))
    await small.aclose()


async def test_live_model_is_wrapped_without_copy_and_keeps_training_mode(smollm2_engine, prompts):
    model = smollm2_engine._model
    live = TransformersEngine(model, model_name="live")
    model.train()
    try:
        greedy = SamplingParams(temperature=0.0, max_tokens=4)
        gen = await live.generate(prompts[0], greedy)
        assert model.training is True  # restored after generating in eval mode
        ref = await smollm2_engine.generate(prompts[0], greedy)
        assert gen.completion_ids == ref.completion_ids and gen.model == "live"
        assert next(live._model.parameters()).data_ptr() == next(model.parameters()).data_ptr()
    finally:
        model.eval()
        await live.aclose()


async def test_bad_prompts_raise_clear_errors(smollm2_engine):
    with pytest.raises(BadRequestError, match="prompt is empty"):
        await smollm2_engine.generate([], SamplingParams(max_tokens=1))
    with pytest.raises(ContextOverflowError, match="8192"):
        await smollm2_engine.generate([1] * 8192, SamplingParams(max_tokens=1))
    with pytest.raises(BadRequestError, match="vocab size 49152"):
        await smollm2_engine.generate([1, 49152], SamplingParams(max_tokens=1))
    with pytest.raises(BadRequestError, match="not str"):
        await smollm2_engine.generate("hello", SamplingParams(max_tokens=1))


async def test_closed_engine_refuses_requests(smollm2_engine, prompts):
    engine = TransformersEngine(smollm2_engine._model, model_name="closing")
    await engine.generate(prompts[0], SamplingParams(temperature=0.0, max_tokens=1))
    await engine.aclose()
    with pytest.raises(EngineError, match="closed"):
        await engine.generate(prompts[0], SamplingParams(max_tokens=1))


async def test_closing_mid_generation_aborts_with_the_tokens_so_far(smollm2_engine, prompts):
    engine = TransformersEngine(smollm2_engine._model, model_name="aborting")
    running = asyncio.ensure_future(engine.generate(prompts[1], SamplingParams(temperature=0.0, max_tokens=400)))
    while engine.batches_run == 0:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.3)  # let a few decode steps run
    await engine.aclose()
    gen = await running
    assert gen.finish_reason == "abort" and 1 <= len(gen.completion_ids) < 400
    assert len(gen.logprobs) == len(gen.completion_ids) and gen.stop_token_id is None


async def test_nan_logits_are_reported_never_passed_on():
    """A model that produces NaN (here: a small real Llama with a poisoned output layer) fails loudly."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
        eos_token_id=1,
    )
    model = LlamaForCausalLM(config).eval()
    engine = TransformersEngine(model, model_name="tiny-llama")
    ok = await engine.generate([3, 4, 5], SamplingParams(temperature=1.0, max_tokens=4, seed=0))
    assert len(ok.completion_ids) == len(ok.logprobs) >= 1 and engine.eos_token_ids == {1}
    with torch.no_grad():
        model.lm_head.weight[7] = float("nan")
    with pytest.raises(InvalidOutputError, match="not a finite number"):
        await engine.generate([3, 4, 5], SamplingParams(temperature=1.0, max_tokens=4, seed=0))
    await engine.aclose()
