"""VLLMEngine without a GPU: argument mapping, output conversion, and the message when vLLM is missing.

The output objects below copy the fields of vLLM's own dataclasses: `RequestOutput` and
`CompletionOutput` (vllm/outputs.py: prompt_token_ids, outputs[i].token_ids / logprobs /
finish_reason / stop_reason) and `Logprob` (vllm/logprobs.py: logprob, rank, decoded_token).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

import pytest

from rollgym.engines.base import GenerationTimings, SamplingParams
from rollgym.engines.errors import EngineUnavailableError, InvalidOutputError, ServerError
from rollgym.engines.vllm_inprocess import VLLMEngine, generation_from_output, sampling_kwargs


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: None
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = True


PROMPT = [1, 2, 3]


def _output(ids, lps, finish="length", stop_reason=None, prompt=PROMPT):
    steps = [{t: Logprob(lp, rank=1)} for t, lp in zip(ids, lps, strict=True)]
    return RequestOutput(
        "r", None, list(prompt), None, [CompletionOutput(0, "", ids, sum(lps), steps, finish, stop_reason)]
    )


def test_sampling_kwargs_map_every_field():
    kwargs = sampling_kwargs(
        SamplingParams(temperature=0.6, top_p=0.95, top_k=40, max_tokens=12, stop_token_ids=[7], seed=9)
    )
    assert kwargs == {
        "n": 1,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 40,
        "max_tokens": 12,
        "stop_token_ids": [7],
        "logprobs": 0,
        "skip_special_tokens": False,
        "seed": 9,
    }
    off = sampling_kwargs(SamplingParams())
    assert off["top_k"] == -1 and "seed" not in off


def test_engine_args_force_processed_logprobs():
    engine = VLLMEngine("Qwen/Qwen3-8B", max_model_len=4096, gpu_memory_utilization=0.8)
    assert engine.engine_args() == {
        "model": "Qwen/Qwen3-8B",
        "logprobs_mode": "processed_logprobs",
        "gpu_memory_utilization": 0.8,
        "max_model_len": 4096,
    }
    with pytest.raises(ValueError, match="processed_logprobs"):
        VLLMEngine("m", logprobs_mode="raw_logprobs")


def test_on_a_cpu_the_engine_defaults_to_float32_eager_and_no_chunked_prefill(monkeypatch):
    from rollgym.engines import vllm_inprocess

    monkeypatch.setattr(vllm_inprocess, "vllm_on_cpu", lambda: True)
    args = VLLMEngine("m").engine_args()
    assert (args["dtype"], args["enforce_eager"], args["enable_chunked_prefill"]) == ("float32", True, False)
    assert VLLMEngine("m", dtype="bfloat16", enable_chunked_prefill=True).engine_args()["dtype"] == "bfloat16"
    monkeypatch.setattr(vllm_inprocess, "vllm_on_cpu", lambda: False)
    assert "dtype" not in VLLMEngine("m").engine_args()  # on a GPU, vLLM's own defaults


def test_output_conversion_reads_ids_logprobs_and_stop():
    gen = generation_from_output(
        _output([5, 6, 7], [-0.1, -0.2, -0.3], "stop", 7),
        PROMPT,
        SamplingParams(max_tokens=5),
        model="m",
        timings=GenerationTimings(),
    )
    assert gen.completion_ids == [5, 6, 7] and gen.logprobs == [-0.1, -0.2, -0.3]
    assert gen.finish_reason == "stop" and gen.stop_token_id == 7 and gen.engine == "vllm" and gen.prompt_len == 3
    eos = generation_from_output(
        _output([5, 2], [-0.1, -0.2], "stop", None),
        PROMPT,
        SamplingParams(max_tokens=5),
        model="m",
        timings=GenerationTimings(),
    )
    assert eos.stop_token_id == 2  # EOS: vLLM's stop_reason is None, the id is the last token


def test_output_conversion_rejects_bad_output():
    sampling = SamplingParams(max_tokens=5)
    with pytest.raises(InvalidOutputError, match="not a finite number"):
        generation_from_output(
            _output([5, 6], [-0.1, float("nan")]), PROMPT, sampling, model="m", timings=GenerationTimings()
        )
    bad = _output([5, 6], [-0.1, -0.2])
    bad.outputs[0].logprobs = bad.outputs[0].logprobs[:1]
    with pytest.raises(InvalidOutputError, match="pair one to one"):
        generation_from_output(bad, PROMPT, sampling, model="m", timings=GenerationTimings())
    with pytest.raises(InvalidOutputError, match="echoed differs"):
        generation_from_output(
            _output([5], [-0.1], prompt=[1, 2, 4]), PROMPT, sampling, model="m", timings=GenerationTimings()
        )
    with pytest.raises(ServerError):
        generation_from_output(_output([5], [-0.1], "error"), PROMPT, sampling, model="m", timings=GenerationTimings())


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
async def test_missing_vllm_is_a_clear_error():
    engine = VLLMEngine("Qwen/Qwen3-8B")
    with pytest.raises(EngineUnavailableError, match="pip install vllm.*vllm:http"):
        await engine.generate(PROMPT, SamplingParams(max_tokens=2))
