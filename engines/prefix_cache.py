"""Prefix KV reuse for `BatchDecoder`: finished rows' keys and values, kept to skip re-prefilling a shared prefix.

A multi-turn rollout re-sends its whole conversation each turn. The store keeps each finished row's KV (its prompt and
sampled ids but the last, whose KV was never computed) keyed by those ids; a new prompt starts from the stored entry
that shares its longest prefix, so only the rest is prefilled: vLLM's automatic prefix caching, seen from outside.
Bounded by total tokens, least recently used out first. KV is only valid for the weights that computed it, so the
store is cleared whenever the model's parameters may have changed (`check_weights`, `clear`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: Default bound of a store, in tokens (about 0.8 GB for Qwen2.5-0.5B in float32, 24 KB a token).
DEFAULT_PREFIX_CACHE_TOKENS = 32_768

#: RoPE variants whose rotation of a position depends on the sequence's length: an earlier KV would not match.
_LENGTH_DEPENDENT_ROPE = frozenset({"dynamic", "longrope"})


@dataclass
class _Entry:
    ids: torch.Tensor  # [T] int64 on the CPU
    kv: torch.Tensor  # [layers, 2 (key, value), kv_heads, T, head_dim] on the model's device


def _rope_types(value: Any) -> set[str]:
    """Every `rope_type` named in a config's RoPE settings (per layer type in some configs)."""
    if not isinstance(value, dict):
        return set()
    found = {str(value["rope_type"])} if "rope_type" in value else set()
    for inner in value.values():
        found |= _rope_types(inner)
    return found


def reusable(config: Any) -> bool:
    """Whether a model's KV can be reused across prompts: only when every layer is plain full attention (no sliding
    window, chunks, linear attention or shared KV) and RoPE does not depend on the sequence's length."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    try:
        layers = DynamicCache(config=config).layers
    except Exception:  # noqa: BLE001 - a config transformers cannot lay out: no reuse, never a failure
        return False
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return False
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    rope = _rope_types(getattr(text, "rope_scaling", None)) | _rope_types(getattr(text, "rope_parameters", None))
    return not rope & _LENGTH_DEPENDENT_ROPE


def weights_fingerprint(model: Any) -> tuple[tuple[int, int, int], ...]:
    """Each parameter's identity, storage and version counter: an optimizer step, `load_state_dict` or any in-place
    edit bumps a counter, a replaced tensor changes storage. (An edit through `.data` is not seen: call `clear`.)"""
    return tuple((id(p), p.data_ptr(), p._version) for p in model.parameters())


def row_kv(cache: Any, slot: int, positions: torch.Tensor) -> torch.Tensor:
    """One row's KV at `positions` (its unmasked columns), copied out of a batch's `DynamicCache`."""
    return torch.stack(
        [
            torch.stack((layer.keys[slot].index_select(1, positions), layer.values[slot].index_select(1, positions)))
            for layer in cache.layers
        ]
    )


def padded_cache(hits: Sequence[tuple[torch.Tensor | None, int]], width: int) -> Any:
    """A `DynamicCache` of `width` columns holding each row's reused KV right-aligned, zeros to its left."""
    from transformers import DynamicCache

    ref = next(kv for kv, _ in hits if kv is not None)
    layers, _, heads, _, dim = ref.shape
    buf = ref.new_zeros((layers, 2, len(hits), heads, width, dim))
    for row, (kv, cached) in enumerate(hits):
        if kv is not None and cached:
            buf[:, :, row, :, width - cached :] = kv
    return DynamicCache(ddp_cache_data=[(buf[i, 0], buf[i, 1]) for i in range(layers)])


class PrefixCache:
    """A bounded LRU store of per-row KV keyed by the exact ids it covers; thread-safe."""

    def __init__(self, max_tokens: int = DEFAULT_PREFIX_CACHE_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._tokens = 0
        self._next_key = 0
        self._epoch = 0  # bumped by `clear`: KV computed before it is never stored after it
        self._fingerprint: tuple | None = None
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        """Tokens held now (never above `max_tokens`)."""
        return self._tokens

    @property
    def epoch(self) -> int:
        """Read before computing KV, passed to `add`: KV from before a `clear` is dropped."""
        return self._epoch

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry (the weights changed)."""
        with self._lock:
            self._entries.clear()
            self._tokens = 0
            self._epoch += 1

    def check_weights(self, fingerprint: tuple) -> None:
        """Clear the store if the weights' fingerprint differs from the one its entries were computed with."""
        if fingerprint != self._fingerprint:
            self.clear()
            self._fingerprint = fingerprint

    def longest_prefix(self, prompt: list[int]) -> tuple[torch.Tensor | None, int]:
        """The stored KV of the longest prefix of `prompt` (leaving at least its last id to compute) and that
        prefix's length; `(None, 0)` when nothing is shared."""
        if not self._entries or len(prompt) < 2:
            return None, 0
        ids = torch.tensor(prompt, dtype=torch.long)
        with self._lock:
            best_key, best_len = None, 0
            for key, entry in self._entries.items():
                most = min(len(entry.ids), len(ids) - 1)
                if most <= best_len:
                    continue
                differ = (entry.ids[:most] != ids[:most]).nonzero()
                shared = int(differ[0, 0]) if len(differ) else most
                if shared > best_len:
                    best_key, best_len = key, shared
            if best_key is None:
                return None, 0
            self._entries.move_to_end(best_key)
            return self._entries[best_key].kv[:, :, :, :best_len], best_len

    def add(self, ids: list[int], kv: torch.Tensor, epoch: int) -> None:
        """Store `kv` (the KV of exactly `ids`), computed under `epoch`. An entry that is a prefix of another is
        redundant (any prompt shares at least as much with the longer one), so only the longer is kept."""
        n = len(ids)
        if n == 0 or n > self.max_tokens:
            return
        key_ids = torch.tensor(ids, dtype=torch.long)
        with self._lock:
            if epoch != self._epoch:
                return
            for key, entry in list(self._entries.items()):
                most = min(len(entry.ids), n)
                if torch.equal(entry.ids[:most], key_ids[:most]):
                    if len(entry.ids) >= n:
                        self._entries.move_to_end(key)
                        return
                    del self._entries[key]
                    self._tokens -= len(entry.ids)
            while self._tokens + n > self.max_tokens:
                _, old = self._entries.popitem(last=False)
                self._tokens -= len(old.ids)
            self._entries[self._next_key] = _Entry(key_ids, kv)
            self._next_key += 1
            self._tokens += n
