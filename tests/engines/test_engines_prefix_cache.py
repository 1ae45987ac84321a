"""Prefix KV reuse in TransformersEngine on the real SmolLM2-135M: the same ids with reuse on and off (logprobs within
1e-4: reused KV was computed in another pass, so its float rounding differs, measured ~1e-5), the KV really reused,
the store's bound, and no reuse across a weight change."""

from __future__ import annotations

import asyncio

import pytest
import torch

from rollgym.engines.base import SamplingParams
from rollgym.engines.prefix_cache import PrefixCache, reusable
from rollgym.engines.transformers_engine import TransformersEngine
from rollgym.engines.weights import VersionedEngine, WeightsVersion
from rollgym.errors import UsageError

pytestmark = pytest.mark.slow

LOGPROB_TOL = 1e-4
GREEDY = SamplingParams(temperature=0.0, max_tokens=16)


def chatml(tokenizer, text: str, *, first: bool) -> list[int]:
    """A user turn in ChatML, ending with the assistant header (after the first turn: the bridge from a reply)."""
    head = "" if first else "<|im_end|>\n"
    return tokenizer(f"{head}<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n")["input_ids"]


QUESTIONS = ["Name a colour.", "Why is the sky blue?", "And the sea?"]


def conversation(tokenizer, gens) -> list[int]:
    """The prompt after `gens` (replies to QUESTIONS in order): every turn so far and the next question."""
    prompt = chatml(tokenizer, QUESTIONS[0], first=True)
    for gen, question in zip(gens, QUESTIONS[1:], strict=False):
        prompt += gen.completion_ids + chatml(tokenizer, question, first=False)
    return prompt


async def converse(engine, tokenizer, turns: int, sampling: SamplingParams):
    """`turns` turns of QUESTIONS; turn k's prompt is turn k-1's, its completion and the next question, as a rollout
    re-sends it."""
    gens = []
    for k in range(turns):
        prompt = conversation(tokenizer, gens)
        seed = None if sampling.seed is None else sampling.seed + k
        gens.append(await engine.generate(prompt, sampling.model_copy(update={"seed": seed})))
    return gens


@pytest.fixture
def engines(smollm2_engine):
    """The same model with reuse on and off (wrapping it: opt in, as a live model defaults to off)."""
    on = TransformersEngine(smollm2_engine._model, model_name="reuse-on", prefix_cache_tokens=32_768)
    off = TransformersEngine(smollm2_engine._model, model_name="reuse-off")
    assert on.prefix_cache is not None and off.prefix_cache is None
    return on, off


async def test_multi_turn_greedy_reuses_the_previous_turn_and_gives_the_same_ids(engines, smollm2_tokenizer):
    on, off = engines
    with_reuse = await converse(on, smollm2_tokenizer, 3, GREEDY)
    without = await converse(off, smollm2_tokenizer, 3, GREEDY)
    for a, b in zip(with_reuse, without, strict=True):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=LOGPROB_TOL)
    assert with_reuse[0].timings.cached_tokens == 0 and all(g.timings.cached_tokens == 0 for g in without)
    for before, after in zip(with_reuse, with_reuse[1:], strict=False):
        # the whole previous row: its prompt and completion but the last id, whose KV was never computed
        assert after.timings.cached_tokens == before.prompt_len + len(before.completion_ids) - 1
    await on.aclose()
    await off.aclose()


async def test_the_reused_kv_is_what_the_model_attends_to(engines, smollm2_tokenizer):
    """Zeroing the stored KV changes the next turn: the cached tokens are not recomputed behind the figure."""
    on, _ = engines
    first = await converse(on, smollm2_tokenizer, 1, GREEDY)
    prompt = conversation(smollm2_tokenizer, first)
    store = on.prefix_cache
    assert store is not None and len(store) == 1
    with torch.inference_mode():  # the stored KV are inference tensors
        for entry in store._entries.values():
            entry.kv.zero_()
    spoiled = await on.generate(prompt, GREEDY)
    store.clear()
    clean = await on.generate(prompt, GREEDY)
    assert spoiled.timings.cached_tokens > 0 and clean.timings.cached_tokens == 0
    assert max(abs(a - b) for a, b in zip(spoiled.logprobs, clean.logprobs, strict=False)) > 0.1 or (
        spoiled.completion_ids != clean.completion_ids
    )
    await on.aclose()


async def test_a_batch_mixing_hits_of_different_lengths_and_misses(engines, smollm2_tokenizer, prompts):
    on, off = engines
    long_conv = await converse(on, smollm2_tokenizer, 2, GREEDY)
    short = chatml(smollm2_tokenizer, "Hi.", first=True)
    short_gen = await on.generate(short, GREEDY)
    batch = [
        conversation(smollm2_tokenizer, long_conv),  # the third turn: hit on the first two
        short + short_gen.completion_ids + chatml(smollm2_tokenizer, "Thanks.", first=False),  # a shorter hit
        prompts[2],  # never seen: no hit
        short[:4] + prompts[3],  # shares 4 ids with a stored row, then differs
        prompts[0],  # never seen
    ]
    batches = on.batches_run
    with_reuse = await asyncio.gather(*(on.generate(p, GREEDY) for p in batch))
    without = await asyncio.gather(*(off.generate(p, GREEDY) for p in batch))
    cached = [g.timings.cached_tokens for g in with_reuse]
    assert on.batches_run == batches + 1, "the five rows shared one batch"
    assert cached[0] > cached[1] > cached[3] == 4 and cached[2] == cached[4] == 0
    for a, b in zip(with_reuse, without, strict=True):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=LOGPROB_TOL)
    await on.aclose()
    await off.aclose()


async def test_seeded_sampling_gives_the_same_ids_with_reuse(engines, smollm2_tokenizer):
    on, off = engines
    seeded = SamplingParams(temperature=1.0, max_tokens=16, seed=1234)
    with_reuse = await converse(on, smollm2_tokenizer, 3, seeded)
    without = await converse(off, smollm2_tokenizer, 3, seeded)
    assert [g.completion_ids for g in with_reuse] == [g.completion_ids for g in without]
    for a, b in zip(with_reuse, without, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=LOGPROB_TOL)
    assert all(g.timings.cached_tokens > 0 for g in with_reuse[1:])
    await on.aclose()
    await off.aclose()


@pytest.mark.parametrize(
    "sampling", [GREEDY, SamplingParams(temperature=1.0, max_tokens=16, seed=7)], ids=["greedy", "seeded"]
)
async def test_identical_prompts_in_a_batch_are_prefilled_once(engines, smollm2_tokenizer, prompts, sampling):
    """A GRPO group's rows share one prefill: each row reports its whole prompt reused (but the first) and samples
    what it samples alone, with reuse on or off (the duplicate sharing does not need the store)."""
    group = chatml(smollm2_tokenizer, "Count to five.", first=True)
    for engine in engines:
        alone = await engine.generate(group, sampling)
        batches = engine.batches_run
        rows = await asyncio.gather(*(engine.generate(p, sampling) for p in [group, prompts[1], group, group]))
        assert engine.batches_run == batches + 1, "the four rows shared one batch"
        assert [g.timings.cached_tokens for g in rows][2:] == [len(group)] * 2
        for g in (rows[0], rows[2], rows[3]):
            assert g.completion_ids == alone.completion_ids
            assert g.logprobs == pytest.approx(alone.logprobs, abs=LOGPROB_TOL)
        await engine.aclose()


def _kv(n: int) -> torch.Tensor:
    return torch.full((1, 2, 1, n, 2), float(n))


def test_the_store_keeps_its_token_bound_and_evicts_the_least_recently_used():
    store = PrefixCache(max_tokens=10)
    store.add([1, 2, 3, 4], _kv(4), store.epoch)
    store.add([5, 6, 7, 8], _kv(4), store.epoch)
    assert store.longest_prefix([1, 2, 3, 9])[1] == 3  # a hit makes [1, 2, 3, 4] the most recently used
    store.add([10, 11, 12], _kv(3), store.epoch)  # 11 tokens would not fit: [5, 6, 7, 8] goes
    assert store.tokens == 7 and len(store) == 2
    assert store.longest_prefix([5, 6, 7, 8, 9])[1] == 0
    kv, shared = store.longest_prefix([1, 2, 3, 4, 5])
    assert shared == 4 and kv is not None and kv.shape[3] == 4
    assert store.longest_prefix([1, 2, 3, 4])[1] == 3, "the last prompt id is always computed"
    store.add([1, 2, 3, 4, 5, 6], _kv(6), store.epoch)  # extends [1, 2, 3, 4]: replaces it
    assert store.tokens == 9 and len(store) == 2
    store.add([1, 2], _kv(2), store.epoch)  # a prefix of a stored entry: nothing new
    assert store.tokens == 9
    store.add(list(range(100, 111)), _kv(11), store.epoch)  # larger than the whole bound: not stored
    assert store.tokens == 9
    stale = store.epoch
    store.clear()
    store.add([1, 2, 3], _kv(3), stale)  # computed before the clear: dropped
    assert store.tokens == 0 and len(store) == 0


async def test_the_bound_holds_in_the_engine_and_zero_disables(smollm2_engine, smollm2_tokenizer):
    small = TransformersEngine(smollm2_engine._model, model_name="small-store", prefix_cache_tokens=60)
    gens = await converse(small, smollm2_tokenizer, 3, GREEDY)
    assert small.prefix_cache is not None and 0 < small.prefix_cache.tokens <= 60
    assert gens[-1].prompt_len + len(gens[-1].completion_ids) - 1 > 60  # the last row did not fit
    await small.aclose()
    loaded_off = TransformersEngine("smollm2-135m", prefix_cache_tokens=0)
    again = await converse(loaded_off, smollm2_tokenizer, 2, GREEDY)
    assert loaded_off.prefix_cache is None and again[1].timings.cached_tokens == 0
    assert smollm2_engine.prefix_cache is not None, "a model the engine loads reuses KV by default"
    with pytest.raises(UsageError, match="prefix_cache_tokens"):
        TransformersEngine(smollm2_engine._model, prefix_cache_tokens=-1)
    await loaded_off.aclose()


@pytest.fixture
def own_model():
    """A model of its own, so changing its weights touches no other test."""
    from transformers import AutoModelForCausalLM

    from rollgym.engines.default_model import smollm2_dir

    return AutoModelForCausalLM.from_pretrained(str(smollm2_dir()), dtype=torch.float32).eval()


async def test_an_optimizer_step_on_a_live_model_clears_the_store(own_model, smollm2_tokenizer):
    live_default = TransformersEngine(own_model, model_name="live")
    assert live_default.prefix_cache is None, "a wrapped live model does not reuse KV unless asked"
    engine = TransformersEngine(own_model, model_name="live-reuse", prefix_cache_tokens=4096)
    off = TransformersEngine(own_model, model_name="live-off", prefix_cache_tokens=0)
    first = await converse(engine, smollm2_tokenizer, 1, GREEDY)
    assert engine.prefix_cache is not None and len(engine.prefix_cache) == 1

    own_model.train()  # a trainer's step: loss, backward, AdamW
    optimizer = torch.optim.AdamW(own_model.parameters(), lr=1e-3)
    batch = torch.tensor([chatml(smollm2_tokenizer, "Say something else entirely.", first=True)])
    own_model(input_ids=batch, labels=batch).loss.backward()
    optimizer.step()
    own_model.eval()

    prompt = conversation(smollm2_tokenizer, first)
    after = await engine.generate(prompt, GREEDY)
    fresh = await off.generate(prompt, GREEDY)
    assert after.timings.cached_tokens == 0
    assert after.completion_ids == fresh.completion_ids and after.logprobs == pytest.approx(fresh.logprobs, abs=1e-6)
    for e in (live_default, engine, off):
        await e.aclose()


async def test_a_weights_version_change_clears_the_store(own_model, smollm2_tokenizer):
    """A sync that bumps no version counter (`.data` copies) still clears the store through `WeightsVersion`."""
    inner = TransformersEngine(own_model, model_name="versioned", prefix_cache_tokens=4096)
    weights = WeightsVersion()
    engine = VersionedEngine(inner, weights)
    await converse(engine, smollm2_tokenizer, 1, GREEDY)
    assert inner.prefix_cache is not None and len(inner.prefix_cache) == 1
    weights.pause()
    with torch.no_grad():
        for p in own_model.parameters():
            p.data.mul_(1.01)  # `.data`: invisible to the version counters
    weights.resume()
    assert len(inner.prefix_cache) == 0
    again = await converse(engine, smollm2_tokenizer, 2, GREEDY)
    assert again[0].timings.cached_tokens == 0 and again[1].timings.cached_tokens > 0
    assert again[1].policy_version == 1
    await engine.aclose()


def test_only_full_attention_models_reuse_kv():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig

    from rollgym.engines.default_model import smollm2_dir

    assert reusable(LlamaConfig.from_pretrained(str(smollm2_dir())))
    assert not reusable(LlamaConfig(rope_scaling={"rope_type": "dynamic", "factor": 2.0}))
    tiny = Gemma3TextConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        sliding_window=4,
    )
    assert not reusable(tiny)
    engine = TransformersEngine(Gemma3ForCausalLM(tiny).eval(), prefix_cache_tokens=4096)
    assert engine.prefix_cache is None, "sliding-window layers: no reuse, silently"
