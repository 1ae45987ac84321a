"""VLLMServerEngine over real HTTP on loopback, against the fault-injection stand-in of vLLM 0.32's server:
what rollgym sends, and what it does when the server or network misbehaves (5xx, timeouts, NaN logprobs, bad
echoes, refusals). Correct behaviour (logprobs, seeds, stop ids, the context clamp, discovery) is tested against
the real vLLM in test_engines_vllm_real.py, which also holds the stand-in's answers to the real ones.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin

from rollgym.engines.base import Engine, GenerationTimings, SamplingParams
from rollgym.engines.errors import (
    BadRequestError,
    ContextOverflowError,
    EngineTimeoutError,
    InvalidOutputError,
    ServerError,
    UnreachableError,
)
from rollgym.engines.vllm_server import VLLMServerEngine

MODEL = "Qwen/Qwen3-8B"
PROMPT = [151644, 872, 198, 9707, 151645]


@pytest.fixture(scope="module")
def standin():
    app, control = make_vllm_standin(MODEL, max_model_len=64, vocab_size=152000, eos_token_id=151645)
    with LoopbackServer(app) as server:
        yield server, control


@pytest.fixture
def control(standin):
    _, control = standin
    control.__init__()  # fresh switches and request log for every test
    return control


@pytest.fixture
async def engine(standin, control):
    server, _ = standin
    eng = VLLMServerEngine(f"{server.base_url}/v1", MODEL, backoff_s=0.01, timeout_s=5.0)
    yield eng
    await eng.aclose()


async def test_sends_token_ids_and_reads_token_ids_and_logprobs(engine, control):
    sampling = SamplingParams(temperature=0.7, top_p=0.9, top_k=20, max_tokens=8, seed=3, stop_token_ids=[13])
    gen = await engine.generate(PROMPT, sampling)
    sent = control.requests[-1]
    assert sent["prompt"] == PROMPT
    assert sent["return_token_ids"] is True and sent["logprobs"] == 0 and sent["skip_special_tokens"] is False
    assert sent["stop_token_ids"] == [13] and sent["seed"] == 3 and sent["top_k"] == 20
    assert sent["temperature"] == 0.7 and sent["top_p"] == 0.9 and sent["model"] == MODEL
    assert sent["max_tokens"] == 8
    assert isinstance(engine, Engine) and engine.max_model_len == 64  # learnt from /v1/models
    assert len(gen.completion_ids) == len(gen.logprobs) >= 1
    assert all(lp <= 0 for lp in gen.logprobs)
    assert gen.engine == "vllm-server" and gen.model == MODEL and gen.prompt_len == len(PROMPT)
    again = await engine.generate(PROMPT, sampling)
    assert again.completion_ids == gen.completion_ids  # same seed, same answer


async def test_top_k_off_and_no_seed_are_left_out(engine, control):
    await engine.generate(PROMPT, SamplingParams(max_tokens=2))
    sent = control.requests[-1]
    assert "top_k" not in sent and "seed" not in sent


async def test_max_tokens_is_clamped_to_the_context(engine, control):
    gen = await engine.generate(PROMPT, SamplingParams(max_tokens=500, seed=2))
    assert control.requests[-1]["max_tokens"] == 64 - len(PROMPT)
    assert len(gen.completion_ids) <= 64 - len(PROMPT)


async def test_5xx_is_retried_then_succeeds(engine, control):
    control.fail_next, control.fail_status = 2, 503
    gen = await engine.generate(PROMPT, SamplingParams(max_tokens=3))
    assert len(control.requests) == 3  # two failures, one success
    assert len(gen.completion_ids) >= 1


async def test_persistent_5xx_is_a_server_error(engine, control):
    control.fail_next, control.fail_status = 10, 500
    with pytest.raises(ServerError, match="HTTP 500"):
        await engine.generate(PROMPT, SamplingParams(max_tokens=3))
    assert len(control.requests) == engine.max_retries + 1


async def test_timeout_is_reported(standin, control):
    server, _ = standin
    eng = VLLMServerEngine(f"{server.base_url}/v1", MODEL, max_model_len=64, timeout_s=0.2, backoff_s=0.01)
    control.delay_s = 1.0
    try:
        with pytest.raises(EngineTimeoutError, match="timeout"):
            await eng.generate(PROMPT, SamplingParams(max_tokens=3))
    finally:
        await eng.aclose()


@pytest.mark.parametrize("mode", ["null", "literal"])
async def test_nan_logprob_is_an_error_never_passed_on(engine, control, mode):
    control.nan_logprob = mode
    with pytest.raises(InvalidOutputError, match="not a finite number"):
        await engine.generate(PROMPT, SamplingParams(max_tokens=4))


async def test_length_mismatch_is_an_error(engine, control):
    control.drop_last_logprob = True
    with pytest.raises(InvalidOutputError, match="pair one to one"):
        await engine.generate(PROMPT, SamplingParams(max_tokens=4))


async def test_wrong_prompt_echo_is_an_error(engine, control):
    control.corrupt_echo = True
    with pytest.raises(InvalidOutputError, match="echoed differs"):
        await engine.generate(PROMPT, SamplingParams(max_tokens=4))


async def test_abort_finish_reason_passes_and_error_finish_is_server_error(engine, control):
    control.finish_reason = "abort"
    gen = await engine.generate(PROMPT, SamplingParams(max_tokens=4))
    assert gen.finish_reason == "abort" and gen.stop_token_id is None
    control.finish_reason = "error"
    with pytest.raises(ServerError, match="'error'"):
        await engine.generate(PROMPT, SamplingParams(max_tokens=4))


async def test_4xx_is_a_clear_error_without_retry(standin, control):
    server, _ = standin
    eng = VLLMServerEngine(f"{server.base_url}/v1", "other/model", max_model_len=64, backoff_s=0.01)
    try:
        with pytest.raises(BadRequestError, match="HTTP 404.*does not exist"):
            await eng.generate(PROMPT, SamplingParams(max_tokens=3))
        assert len(control.requests) == 1
    finally:
        await eng.aclose()


async def test_discovery_rejects_a_model_the_server_does_not_serve(standin, control):
    server, _ = standin
    eng = VLLMServerEngine(f"{server.base_url}/v1", "not/served", backoff_s=0.01)
    try:
        with pytest.raises(BadRequestError, match="does not serve 'not/served'"):
            await eng.generate(PROMPT, SamplingParams(max_tokens=3))
    finally:
        await eng.aclose()


async def test_bad_prompts_fail_before_any_request(engine, control):
    with pytest.raises(BadRequestError, match="prompt is empty"):
        await engine.generate([], SamplingParams(max_tokens=3))
    await engine.generate(PROMPT, SamplingParams(max_tokens=1))  # learn max_model_len
    n = len(control.requests)
    with pytest.raises(ContextOverflowError, match="context is 64"):
        await engine.generate(list(range(100)), SamplingParams(max_tokens=3))
    assert len(control.requests) == n


async def test_unreachable_server_is_a_clear_error():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    eng = VLLMServerEngine(f"http://127.0.0.1:{port}/v1", MODEL, max_model_len=64, max_retries=2, backoff_s=0.01)
    try:
        with pytest.raises(UnreachableError, match="after 3 attempts.*--logprobs-mode processed_logprobs"):
            await eng.generate(PROMPT, SamplingParams(max_tokens=3))
    finally:
        await eng.aclose()


async def test_concurrency_limit_is_respected(standin, control):
    server, _ = standin
    eng = VLLMServerEngine(f"{server.base_url}/v1", MODEL, max_model_len=64, max_concurrency=2)
    control.delay_s = 0.05
    try:
        gens = await asyncio.gather(*(eng.generate(PROMPT, SamplingParams(max_tokens=2)) for _ in range(6)))
        # with 2 slots and 6 requests of ~50 ms, later requests must have queued for a slot
        assert max(g.timings.queued_s for g in gens) >= 0.08
    finally:
        await eng.aclose()


def test_parse_response_without_token_ids_explains_the_version_need():
    eng = VLLMServerEngine("http://127.0.0.1:9/v1", MODEL, max_model_len=64)
    raw = {
        "model": MODEL,
        "choices": [{"index": 0, "text": "hi", "finish_reason": "length", "logprobs": {"token_logprobs": [-1.0]}}],
    }
    with pytest.raises(InvalidOutputError, match="return_token_ids"):
        eng.parse_response(raw, PROMPT, SamplingParams(max_tokens=1), GenerationTimings())
