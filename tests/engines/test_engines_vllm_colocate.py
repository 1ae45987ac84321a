"""VLLMColocateEngine without a GPU: concurrent requests become one `LLM.generate` call, outputs are converted.

The stand-in `LLM` has the signature of `vllm.LLM.generate(prompts, sampling_params, use_tqdm)` with
prompts as `{"prompt_token_ids": [...]}` (vllm/inputs/data.py TokensPrompt) and returns objects with the
fields of vLLM's `RequestOutput` / `CompletionOutput` / `Logprob` (vllm/outputs.py, vllm/logprobs.py),
reused from the in-process engine's tests.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from test_engines_vllm_inprocess import CompletionOutput, Logprob, RequestOutput

from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import InvalidOutputError
from rollgym.engines.vllm_colocate import VLLMColocateEngine


@dataclass
class FakeVllmSampling:
    """Records the keyword arguments a `vllm.SamplingParams` would receive."""

    kwargs: dict

    def __init__(self, **kwargs):
        self.kwargs = kwargs


class StandInLLM:
    def __init__(self, nan: bool = False):
        self.calls: list[tuple[list, list]] = []
        self.nan = nan

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        self.calls.append((prompts, sampling_params))
        outs = []
        for i, (p, _sp) in enumerate(zip(prompts, sampling_params, strict=True)):
            ids = [100 + i, 7]
            lp = float("nan") if self.nan else -0.5
            outs.append(
                RequestOutput(
                    request_id=str(i),
                    prompt=None,
                    prompt_token_ids=p["prompt_token_ids"],
                    prompt_logprobs=None,
                    outputs=[
                        CompletionOutput(
                            index=0,
                            text="",
                            token_ids=ids,
                            cumulative_logprob=None,
                            logprobs=[{t: Logprob(lp)} for t in ids],
                            finish_reason="stop",
                            stop_reason=None,
                        )
                    ],
                )
            )
        return outs


async def test_concurrent_requests_form_one_generate_call():
    llm = StandInLLM()
    engine = VLLMColocateEngine(llm, model="m", max_model_len=64, sampling_cls=FakeVllmSampling)
    sampling = SamplingParams(temperature=0.7, top_k=5, max_tokens=4, stop_token_ids=[7], seed=3)
    gens = await asyncio.gather(*[engine.generate([1, 2, i + 3], sampling) for i in range(3)])
    assert len(llm.calls) == 1 and len(llm.calls[0][0]) == 3
    assert llm.calls[0][0][2] == {"prompt_token_ids": [1, 2, 5]}
    kwargs = llm.calls[0][1][0].kwargs
    assert kwargs["logprobs"] == 0 and kwargs["top_k"] == 5 and kwargs["stop_token_ids"] == [7] and kwargs["seed"] == 3
    assert [g.completion_ids for g in gens] == [[100, 7], [101, 7], [102, 7]]
    assert all(g.stop_token_id == 7 and g.logprobs == [-0.5, -0.5] and g.engine == "vllm-colocate" for g in gens)
    await engine.aclose()


async def test_nan_logprob_is_an_error_for_that_request():
    engine = VLLMColocateEngine(StandInLLM(nan=True), model="m", sampling_cls=FakeVllmSampling)
    with pytest.raises(InvalidOutputError, match="not a finite number"):
        await engine.generate([1, 2], SamplingParams(max_tokens=4))
