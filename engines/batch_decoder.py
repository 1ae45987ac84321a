"""The torch side of TransformersEngine: decode one left-padded batch with a KV cache, row by row.

Each row finishes on its own (stop id, max_tokens, context limit, or abandoned/closing -> abort);
finished rows leave the KV cache (`DynamicCache.batch_select_indices`) so the rest decode faster, their KV kept
in a `PrefixCache` first: a later prompt that extends one (the next turn) prefills only what is new.
Every row samples with its own `torch.Generator`, so a seeded row is independent of its neighbours.
Runs in a worker thread, under one lock per model object, in eval + inference mode, and restores
the model's training flag afterwards (a trainer's live model can be wrapped).
"""

from __future__ import annotations

import inspect
import random
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from rollgym.engines.base import SamplingParams
from rollgym.engines.prefix_cache import PrefixCache, padded_cache, reusable, row_kv, weights_fingerprint
from rollgym.engines.sampling import processed_logprobs, sample_rows


@dataclass
class DecodeRow:
    """One request as the decoder sees it; `abandoned()` says nobody waits for it any more."""

    prompt: list[int]
    sampling: SamplingParams
    abandoned: Callable[[], bool] = lambda: False


@dataclass
class RowResult:
    """What one row produced: ids with their processed logprobs, and why it ended."""

    ids: list[int]
    logprobs: list[float]
    finish_reason: str
    stop_token_id: int | None
    generate_s: float
    cached_tokens: int = 0  # prompt ids not prefilled for it: from the prefix store, or all of them for a duplicate


_MODEL_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_MODEL_LOCKS_GUARD = threading.Lock()


def lock_for(model: Any) -> threading.Lock:
    """One lock per model object: decoders sharing a (live) model never run it at once, nor flip its mode under each other."""
    with _MODEL_LOCKS_GUARD:
        lock = _MODEL_LOCKS.get(model)
        if lock is None:
            lock = _MODEL_LOCKS[model] = threading.Lock()
        return lock


class BatchDecoder:
    """Samples completions for a batch of rows from a Hugging Face causal LM."""

    def __init__(
        self, model: Any, *, eos_token_ids: frozenset[int], max_model_len: int | None, prefix_cache_tokens: int = 0
    ) -> None:
        """`prefix_cache_tokens`: the bound of the prefix KV store (0: none); a model whose KV cannot be reused
        (sliding window, hybrid layers) gets none whatever the bound."""
        self._model = model
        self.eos_token_ids = eos_token_ids
        self.max_model_len = max_model_len
        self._device = next(model.parameters()).device
        self._pad_id = min(eos_token_ids) if eos_token_ids else 0
        self._keep_kwarg = self._logits_kwarg()
        self._cache_kwarg = self._cache_kwarg_name()
        self._lock = lock_for(model)
        self.closing = threading.Event()  # set by the engine: running rows end with "abort"
        self.prefix_cache = (
            PrefixCache(prefix_cache_tokens) if prefix_cache_tokens > 0 and reusable(model.config) else None
        )

    def run(self, rows: list[DecodeRow]) -> list[RowResult]:
        """Decode `rows` to completion (call from a worker thread)."""
        with self._lock:
            was_training = self._model.training
            self._model.eval()
            try:
                if self.prefix_cache is not None:  # KV from other weights is never reused
                    self.prefix_cache.check_weights(weights_fingerprint(self._model))
                with torch.inference_mode():
                    return self._decode(rows)
            finally:
                self._model.train(was_training)

    def _logits_kwarg(self) -> str | None:
        try:
            params = inspect.signature(self._model.forward).parameters
        except (TypeError, ValueError):
            return None
        for name in ("logits_to_keep", "num_logits_to_keep"):
            if name in params:
                return name
        return None

    def _cache_kwarg_name(self) -> str:
        """`cache` where the model's forward takes it (transformers 5.24 renamed `past_key_values`, which still works
        with a deprecation warning per call), else `past_key_values`."""
        try:
            params = inspect.signature(self._model.forward).parameters
        except (TypeError, ValueError):
            return "past_key_values"
        return "cache" if "cache" in params else "past_key_values"

    def _forward(self, input_ids, attention_mask, position_ids, cache) -> torch.Tensor:
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids,
            self._cache_kwarg: cache,
            "use_cache": True,
        }
        if self._keep_kwarg:
            kwargs[self._keep_kwarg] = 1
        out = self._model(**kwargs)
        return out.logits[:, -1, :].float()

    def _generator(self, seed: int | None) -> torch.Generator:
        g = torch.Generator(device=self._device)
        g.manual_seed(seed if seed is not None else random.SystemRandom().randrange(2**63))
        return g

    def _decode(self, batch: list[DecodeRow]) -> list[RowResult]:
        from transformers import DynamicCache

        start = time.perf_counter()
        dev = self._device
        n = len(batch)
        store = self.prefix_cache
        epoch = store.epoch if store is not None else 0
        hits = [store.longest_prefix(r.prompt) for r in batch] if store is not None else [(None, 0)] * n
        cached = [c for _, c in hits]
        # row i: its reused KV right-aligned in the first `width_c` columns, the rest of its prompt right-aligned in
        # the next `width_s`; mask holes are left out of attention and position ids (no reuse: plain left padding)
        width_c = max(cached)
        width_s = max(len(r.prompt) - c for r, c in zip(batch, cached, strict=True))
        input_ids = torch.full((n, width_s), self._pad_id, dtype=torch.long)
        mask = torch.zeros((n, width_c + width_s), dtype=torch.long)
        for i, (r, c) in enumerate(zip(batch, cached, strict=True)):
            rest = len(r.prompt) - c
            input_ids[i, width_s - rest :] = torch.tensor(r.prompt[c:], dtype=torch.long)
            mask[i, width_c - c : width_c] = 1
            mask[i, width_c + width_s - rest :] = 1
        input_ids, mask = input_ids.to(dev), mask.to(dev)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, width_c:]
        temperature = torch.tensor([r.sampling.temperature for r in batch], dtype=torch.float32, device=dev)
        top_k = torch.tensor([r.sampling.top_k for r in batch], dtype=torch.long, device=dev)
        top_p = torch.tensor([r.sampling.top_p for r in batch], dtype=torch.float32, device=dev)
        generators = [self._generator(r.sampling.seed) for r in batch]
        stops = [self.eos_token_ids | set(r.sampling.stop_token_ids) for r in batch]
        limits = [
            min(
                r.sampling.max_tokens,
                (self.max_model_len - len(r.prompt)) if self.max_model_len else r.sampling.max_tokens,
            )
            for r in batch
        ]

        ids: list[list[int]] = [[] for _ in batch]
        lps: list[list[float]] = [[] for _ in batch]
        done: list[RowResult | None] = [None] * n
        active = list(range(n))  # batch rows still decoding, in cache-row order
        # identical prompts (a GRPO group's) are prefilled once, then their KV and logits copied to each row
        first_of: dict[tuple[int, ...], int] = {}
        first = [first_of.setdefault(tuple(r.prompt), i) for i, r in enumerate(batch)]
        unique = sorted(first_of.values())
        cache = padded_cache([hits[i] for i in unique], width_c) if width_c else DynamicCache()
        if len(unique) == n:
            logits = self._forward(input_ids, mask, positions, cache)
        else:
            pick = torch.tensor(unique, device=dev)
            logits = self._forward(input_ids[pick], mask[pick], positions[pick], cache)
            slot = {row: k for k, row in enumerate(unique)}
            spread = torch.tensor([slot[i] for i in first], device=dev)
            cache.batch_select_indices(spread)
            logits = logits[spread]
        reused = [c if first[i] == i else len(r.prompt) for i, (r, c) in enumerate(zip(batch, cached, strict=True))]
        last_pos = positions[:, -1:]
        while True:
            rows = torch.tensor(active, device=dev)
            logprobs = processed_logprobs(logits, temperature[rows], top_k[rows], top_p[rows])
            picked = sample_rows(logprobs, temperature[rows] <= 0, [generators[i] for i in active])
            picked_lp = logprobs.gather(1, picked.unsqueeze(1)).squeeze(1).tolist()
            picked = picked.tolist()
            aborting = self.closing.is_set()
            keep: list[int] = []
            for slot, row in enumerate(active):
                token = picked[slot]
                ids[row].append(token)
                lps[row].append(picked_lp[slot])
                finish, stop_id = None, None
                if token in stops[row]:
                    finish, stop_id = "stop", token
                elif len(ids[row]) >= limits[row]:
                    finish = "length"
                elif aborting or batch[row].abandoned():  # closing, or nobody waits any more
                    finish = "abort"
                if finish is None:
                    keep.append(slot)
                    continue
                done[row] = RowResult(ids[row], lps[row], finish, stop_id, time.perf_counter() - start, reused[row])
                if store is not None:  # the KV of its prompt and its ids but the last (never fed back)
                    covered, seen = batch[row].prompt + ids[row][:-1], mask[slot].nonzero().squeeze(1)
                    if len(seen) == len(covered):
                        store.add(covered, row_kv(cache, slot, seen), epoch)
            if not keep:
                break
            if len(keep) < len(active):
                index = torch.tensor(keep, device=dev)
                cache.batch_select_indices(index)
                mask = mask[index]
                last_pos = last_pos[index]
                picked = [picked[s] for s in keep]
                active = [active[s] for s in keep]
            next_ids = torch.tensor(picked, dtype=torch.long, device=dev).unsqueeze(1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            last_pos = last_pos + 1
            logits = self._forward(next_ids, mask, last_pos, cache)
        return list(done)  # type: ignore[misc]  # the loop ends only once every row has its RowResult (no None left)
