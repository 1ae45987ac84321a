"""VLLMEngine: vLLM's async engine in this process, for offline batch generation on a GPU.

Written against vLLM's documented API (imported only when the engine starts):
- `vllm.engine.arg_utils.AsyncEngineArgs(model=..., logprobs_mode="processed_logprobs", ...)` and
  `vllm.v1.engine.async_llm.AsyncLLM.from_engine_args(args)` (vllm/v1/engine/async_llm.py);
  `logprobs_mode` is one of raw_logits / raw_logprobs / processed_logits / processed_logprobs
  (`LogprobsMode` in vllm/config/model.py); processed_logprobs makes the reported logprob the one
  of the distribution actually sampled from, after temperature/top-k/top-p;
- `AsyncLLM.generate(TokensPrompt(prompt_token_ids=ids), SamplingParams(...), request_id)`, an async
  iterator of `RequestOutput` (`prompt_token_ids`, `outputs[0].token_ids`, `outputs[0].logprobs` a
  list of `{token_id: Logprob(logprob, rank, decoded_token)}`, `finish_reason`, `stop_reason`);
- `vllm.SamplingParams(n=1, logprobs=0, ...)`: `logprobs=0` returns only the sampled token's logprob;
  `top_k=-1` disables top-k in every vLLM version (newer ones also accept 0).

It cannot run on a machine without a GPU; `sampling_kwargs` and `generation_from_output` are pure
and tested without vLLM.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Sequence

from .base import Generation, SamplingParams, GenerationTimings
from rollgym.errors import UsageError

from .errors import EngineError, EngineUnavailableError, InvalidOutputError, ServerError
from .validation import check_context, checked_generation, validate_prompt

LOGPROBS_MODE = "processed_logprobs"


def sampling_kwargs(sampling: SamplingParams) -> dict[str, Any]:
    """Keyword arguments for `vllm.SamplingParams` equivalent to rollgym's `SamplingParams`."""
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k if sampling.top_k > 0 else -1,
        "max_tokens": sampling.max_tokens,
        "stop_token_ids": list(sampling.stop_token_ids),
        "logprobs": 0,
        "skip_special_tokens": False,
    }
    if sampling.seed is not None:
        kwargs["seed"] = sampling.seed
    return kwargs


def generation_from_output(
    output: Any, prompt: list[int], sampling: SamplingParams, *, model: str, timings: GenerationTimings, engine: str = "vllm"
) -> Generation:
    """Convert a final vLLM `RequestOutput` into a validated `Generation`."""
    if not getattr(output, "outputs", None):
        raise InvalidOutputError(f"{engine}: the request output has no completion")
    completion = output.outputs[0]
    ids = [int(t) for t in completion.token_ids]
    if completion.logprobs is None:
        raise InvalidOutputError(f"{engine}: no logprobs in the output although logprobs=0 was requested")
    steps = list(completion.logprobs)
    if len(steps) != len(ids):
        raise InvalidOutputError(f"{engine}: {len(ids)} completion ids but {len(steps)} logprobs; they must pair one to one")
    logprobs: list[float | None] = []
    for position, (token, step) in enumerate(zip(ids, steps)):
        entry = step.get(token) if step is not None else None
        if entry is None:
            raise InvalidOutputError(f"{engine}: no logprob for sampled token {token} at position {position}")
        logprobs.append(float(entry.logprob))
    finish = completion.finish_reason
    if finish == "error":
        raise ServerError(f"{engine}: vLLM ended the request with finish_reason 'error'")
    if finish is None:
        raise InvalidOutputError(f"{engine}: the output is not finished (finish_reason None)")
    stop_token_id = None
    if finish == "stop" and ids:
        stop_token_id = completion.stop_reason if isinstance(completion.stop_reason, int) else ids[-1]
    return checked_generation(
        engine=engine,
        model=model,
        sampling=sampling,
        completion_ids=ids,
        logprobs=logprobs,
        finish_reason=finish,
        stop_token_id=stop_token_id,
        prompt_ids=prompt,
        echoed_prompt=getattr(output, "prompt_token_ids", None),
        timings=timings,
    )


def _import_vllm():
    try:
        import vllm  # noqa: F401
        from vllm import SamplingParams as VllmSamplingParams
        from vllm import TokensPrompt
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.sampling_params import RequestOutputKind
        from vllm.v1.engine.async_llm import AsyncLLM
    except ImportError as exc:
        raise EngineUnavailableError(
            "the in-process vLLM engine needs vLLM (a GPU machine): `pip install vllm` there, or use "
            "`vllm:http://HOST:PORT/v1#MODEL` against a running `vllm serve MODEL --logprobs-mode processed_logprobs`, "
            f"or the CPU engine `hf:DIR` / `smollm2-135m` ({exc})"
        ) from None
    return AsyncEngineArgs, AsyncLLM, VllmSamplingParams, TokensPrompt, RequestOutputKind


class VLLMEngine:
    """Engine running vLLM's `AsyncLLM` in this process, with `logprobs_mode="processed_logprobs"`."""

    name = "vllm"
    token_exact = True

    def __init__(self, model: str, *, max_model_len: int | None = None, **engine_args: Any) -> None:
        """`model` is a HF id or directory; extra keyword arguments go to vLLM's `AsyncEngineArgs`.
        The engine starts on first use (so constructing one never needs a GPU)."""
        if engine_args.get("logprobs_mode", LOGPROBS_MODE) != LOGPROBS_MODE:
            raise UsageError(f"VLLMEngine always runs with logprobs_mode={LOGPROBS_MODE!r} (token-exact logprobs)")
        engine_args.pop("logprobs_mode", None)
        self.model = model
        self.max_model_len = max_model_len
        self._engine_args = engine_args
        self._llm: Any = None
        self._vllm: tuple | None = None

    def engine_args(self) -> dict[str, Any]:
        """The keyword arguments passed to `AsyncEngineArgs`."""
        args = {"model": self.model, "logprobs_mode": LOGPROBS_MODE, **self._engine_args}
        if self.max_model_len is not None:
            args["max_model_len"] = self.max_model_len
        return args

    def _start(self) -> Any:
        if self._llm is None:
            self._vllm = _import_vllm()
            AsyncEngineArgs, AsyncLLM, *_ = self._vllm
            try:
                args = AsyncEngineArgs(**self.engine_args())
            except TypeError as exc:
                raise EngineUnavailableError(f"this vLLM does not accept {exc}; upgrade to a vLLM whose AsyncEngineArgs has logprobs_mode") from None
            self._llm = AsyncLLM.from_engine_args(args)
            self.max_model_len = int(self._llm.model_config.max_model_len)
        return self._llm

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        """Sample one completion with vLLM; many concurrent calls are batched by vLLM itself."""
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        llm = self._start()
        check_context(len(prompt), max_model_len=self.max_model_len, engine=self.name)
        _, _, VllmSamplingParams, TokensPrompt, RequestOutputKind = self._vllm  # type: ignore[misc]
        params = VllmSamplingParams(**sampling_kwargs(sampling), output_kind=RequestOutputKind.FINAL_ONLY)
        started = time.perf_counter()
        final = None
        try:
            async for output in llm.generate(TokensPrompt(prompt_token_ids=prompt), params, f"rollgym-{uuid.uuid4().hex}"):
                final = output
        except (asyncio.CancelledError, EngineError):
            raise
        except Exception as exc:
            raise EngineError(f"{self.name}: vLLM failed: {exc!r}") from exc
        if final is None:
            raise InvalidOutputError(f"{self.name}: vLLM returned no output")
        return generation_from_output(
            final, prompt, sampling, model=self.model, engine=self.name,
            timings=GenerationTimings(queued_s=0.0, generate_s=time.perf_counter() - started),
        )

    async def aclose(self) -> None:
        """Shut vLLM's engine core down."""
        if self._llm is not None:
            self._llm.shutdown()
            self._llm = None
