"""TransformersEngine: in-process sampling from a Hugging Face causal LM with dynamic batching.

Concurrent `generate` calls are batched: requests that arrive while a batch runs form the next
batch. A batch is left-padded (attention mask, position ids from the mask), decoded with a KV cache,
and each request finishes on its own (stop id, max_tokens, context limit); `batch_decoder.py` does
the torch work, this module the async API and the batching. Sampling is our own
loop (not `model.generate`) so the logprob returned is exactly the processed logprob of the sampled
id (see `sampling.py`); each request draws from its own `torch.Generator`, so a seeded request gives
the same tokens whatever its batch neighbours. The torch work runs in a worker thread, so the event
loop stays free.

Stop ids: `sampling.stop_token_ids` plus the model's end-of-sequence ids (generation_config /
config / tokenizer `eos_token_id`), like vLLM, which stops on EOS unless `ignore_eos`. The stop id is
kept as the last completion id, with its logprob, as vLLM's `token_ids` do.

Greedy (temperature 0): the reported logprob is the model's plain log-softmax of the chosen id.

Prefix reuse (`prefix_cache_tokens`): a finished request's KV is kept, and a later prompt that shares a prefix with
it (the next turn of a conversation) prefills only the rest (`prefix_cache.py`). On by default for a model the engine
loads; off for a wrapped live model, whose weights may change in ways no counter shows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams
from rollgym.engines.batch_decoder import BatchDecoder, DecodeRow
from rollgym.engines.default_model import DEFAULT_MODEL, resolve_model_dir
from rollgym.engines.errors import EngineError, ModelUnavailableError
from rollgym.engines.prefix_cache import DEFAULT_PREFIX_CACHE_TOKENS
from rollgym.engines.validation import checked_generation, validate_prompt
from rollgym.errors import UsageError


@dataclass
class _Request:
    prompt: list[int]
    sampling: SamplingParams
    future: asyncio.Future
    enqueued: float = field(default_factory=time.perf_counter)
    started: float = 0.0


def _as_id_list(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


class TransformersEngine:
    """Token-in/token-out engine over a Hugging Face causal LM, in this process (CPU or GPU)."""

    name = "transformers"
    token_exact = True

    def __init__(
        self,
        model: str | Path | Any = DEFAULT_MODEL,
        *,
        tokenizer: Any | None = None,
        eos_token_ids: Iterable[int] | None = None,
        max_model_len: int | None = None,
        max_batch_size: int = 32,
        model_name: str | None = None,
        device: str | torch.device | None = None,
        dtype: torch.dtype | None = None,
        prefix_cache_tokens: int | None = None,
    ) -> None:
        """Load a model directory / name (`smollm2-135m`, a local HF dir, a cached hub id), or wrap a live
        `PreTrainedModel` (a trainer's model generates without a weight copy). `eos_token_ids` replaces the
        default stop ids (generation_config/config/`tokenizer` EOS); pass `[]` to stop only on `stop_token_ids`.
        `prefix_cache_tokens` bounds the prefix KV store (0: no reuse; default 32,768 for a loaded model, 0 for a
        live one)."""
        if max_batch_size < 1:
            raise UsageError("max_batch_size must be >= 1")
        if prefix_cache_tokens is not None and prefix_cache_tokens < 0:
            raise UsageError("prefix_cache_tokens must be >= 0")
        live = not isinstance(model, (str, Path))
        if not live:
            from transformers import AutoModelForCausalLM
            from transformers.utils import logging as hf_logging

            directory = resolve_model_dir(str(model))
            bar = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # a local directory loads in a second: its bar is only noise
            try:
                self._model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype or torch.float32)
            except (OSError, ValueError) as exc:
                raise ModelUnavailableError(
                    f"could not load a causal LM from {directory}: {exc}; it must be a Hugging Face model directory "
                    "(config.json, weights, tokenizer files) of a text-generation model"
                ) from None
            finally:
                if bar:
                    hf_logging.enable_progress_bar()
            if device is not None:
                self._model.to(device)  # pyright: ignore[reportArgumentType]  # transformers wraps `to` in functools.wraps(Module.to): pyright then binds `device` to `self`
            self._model.eval()
            self.model = model_name or str(model)
        else:
            if not hasattr(model, "config") or not callable(model):
                raise UsageError("model must be a model name, a directory, or a transformers PreTrainedModel")
            self._model = model
            self.model = model_name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        config = self._model.config
        self.max_model_len = int(max_model_len or getattr(config, "max_position_embeddings", 0) or 0) or None
        self.vocab_size = int(getattr(config, "vocab_size", 0) or 0) or None
        eos = set(_as_id_list(eos_token_ids))
        if eos_token_ids is None:
            gen_cfg = getattr(self._model, "generation_config", None)
            eos.update(_as_id_list(getattr(gen_cfg, "eos_token_id", None)))
            eos.update(_as_id_list(getattr(config, "eos_token_id", None)))
            if tokenizer is not None:
                eos.update(_as_id_list(getattr(tokenizer, "eos_token_id", None)))
        self.eos_token_ids = frozenset(eos)
        self.max_batch_size = max_batch_size
        self.batches_run = 0  # how many batches have run (observability; tests check the batching with it)
        if prefix_cache_tokens is None:
            prefix_cache_tokens = 0 if live else DEFAULT_PREFIX_CACHE_TOKENS
        self._decoder = BatchDecoder(
            self._model,
            eos_token_ids=self.eos_token_ids,
            max_model_len=self.max_model_len,
            prefix_cache_tokens=prefix_cache_tokens,
        )
        self.prefix_cache = self._decoder.prefix_cache  # None: no reuse (off, or a model whose KV cannot be reused)
        self._pending: list[_Request] = []
        self._wake: asyncio.Event | None = None
        self._batcher: asyncio.Task | None = None
        self._batcher_loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    # ----- public API -------------------------------------------------------------------------
    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        """Sample one completion; concurrent calls share batches."""
        if self._closed:
            raise EngineError(f"{self.name}: the engine is closed")
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(
            prompt_ids, max_model_len=self.max_model_len, vocab_size=self.vocab_size, engine=self.name
        )
        loop = asyncio.get_running_loop()
        request = _Request(prompt, sampling, loop.create_future())
        self._pending.append(request)
        self._ensure_batcher()
        assert self._wake is not None  # _ensure_batcher made it
        self._wake.set()
        return await request.future

    def clear_prefix_cache(self) -> None:
        """Forget every stored KV: call it after changing the model's weights in a way that bumps no parameter's
        version counter (`param.data.copy_`); optimizer steps and `load_state_dict` clear it on their own."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    async def aclose(self) -> None:
        """Stop the batcher: running requests end with finish_reason 'abort', queued ones fail."""
        self._closed = True
        self._decoder.closing.set()
        for request in self._pending:
            if not request.future.done():
                request.future.set_exception(EngineError(f"{self.name}: the engine was closed before the request ran"))
        self._pending.clear()
        if self._batcher is not None and self._batcher_loop is asyncio.get_running_loop():
            if self._wake is not None:
                self._wake.set()
            try:
                await self._batcher
            except asyncio.CancelledError:
                pass
            self._batcher = None

    # ----- batching ---------------------------------------------------------------------------
    def _ensure_batcher(self) -> None:
        """Start the batcher task on the running loop (again, if an earlier loop was closed)."""
        loop = asyncio.get_running_loop()
        if self._batcher is None or self._batcher.done() or self._batcher_loop is not loop:
            self._pending = [r for r in self._pending if r.future.get_loop() is loop]
            self._wake = asyncio.Event()
            self._batcher_loop = loop
            self._batcher = loop.create_task(self._run_batches(), name="rollgym-transformers-batcher")

    async def _run_batches(self) -> None:
        while not self._closed:
            if not self._pending:
                wake = self._wake
                assert wake is not None  # _ensure_batcher makes it before it starts this task
                wake.clear()
                await wake.wait()
                continue
            batch = [r for r in self._pending[: self.max_batch_size] if not r.future.done()]
            del self._pending[: self.max_batch_size]
            if not batch:
                continue
            now = time.perf_counter()
            for r in batch:
                r.started = now
            self.batches_run += 1
            try:
                rows = [DecodeRow(r.prompt, r.sampling, r.future.cancelled) for r in batch]
                results = await asyncio.to_thread(self._decoder.run, rows)
            except Exception as exc:  # noqa: BLE001 - the whole batch failed: every caller gets the error
                err = exc if isinstance(exc, EngineError) else EngineError(f"{self.name}: generation failed: {exc!r}")
                for r in batch:
                    if not r.future.done():
                        r.future.set_exception(err)
                continue
            for r, res in zip(batch, results, strict=True):
                if r.future.done():
                    continue
                try:
                    gen = checked_generation(
                        engine=self.name,
                        model=self.model,
                        sampling=r.sampling,
                        completion_ids=res.ids,
                        logprobs=res.logprobs,
                        finish_reason=res.finish_reason,
                        stop_token_id=res.stop_token_id,
                        prompt_ids=r.prompt,
                        timings=GenerationTimings(
                            queued_s=r.started - r.enqueued, generate_s=res.generate_s, cached_tokens=res.cached_tokens
                        ),
                    )
                except EngineError as exc:
                    r.future.set_exception(exc)
                else:
                    r.future.set_result(gen)
