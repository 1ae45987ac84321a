"""TRL's AsyncGRPOTrainer on a CPU: its tree attention, computed with PyTorch's own attention instead of FlashAttention 3.

TRL 1.16 packs each micro-batch's samples into a prefix tree and runs attention through `tree_fa3`
(`trl/experimental/async_grpo/packing.py`): FlashAttention 3's varlen kernel fetched from the Hugging Face hub, which
needs CUDA (and the hub). The math is plain causal attention per tree segment: segment `s` holds the queries
`cu_seqlens_q[s]:cu_seqlens_q[s+1]` and attends to the keys and values its root-to-segment path gathers
(`tree_kv_index[cu_seqlens_k[s]:cu_seqlens_k[s+1]]`), aligned bottom-right (query `i` of `Lq` sees keys up to
`i + Lk - Lq`), as FlashAttention's causal varlen mode does; here that is PyTorch's `scaled_dot_product_attention`
per segment (`rollgym.integrations.trl.cpu_async` registers it under TRL's name).
"""

from __future__ import annotations

from typing import Any


def _segment_attention(q: Any, k: Any, v: Any, scale: float | None, window: int | None) -> Any:
    """Causal attention of `q` (Lq, H, D) over `k`, `v` (Lk, Hk, D), bottom-right aligned; returns (Lq, H, D)."""
    import torch
    import torch.nn.functional as F

    lq, heads, _ = q.shape
    lk, kv_heads = k.shape[0], k.shape[1]
    if kv_heads != heads:  # grouped-query attention: each key/value head serves heads // kv_heads query heads
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    if lq == lk and not window:  # a segment that is a whole path (the common case): PyTorch's own causal kernel
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale).transpose(0, 1)
    rows = torch.arange(lq).unsqueeze(1) + (lk - lq)
    cols = torch.arange(lk).unsqueeze(0)
    allowed = cols <= rows
    if window:
        allowed = allowed & (cols > rows - window)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=scale).transpose(0, 1)


def cpu_tree_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    *,
    tree_kv_index: Any = None,
    tree_cu_seqlens_q: Any = None,
    tree_cu_seqlens_k: Any = None,
    tree_max_seqlen_q: Any = None,
    tree_max_seqlen_k: Any = None,
    scaling: float | None = None,
    sliding_window: int | None = None,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """TRL's `tree_attention` signature and result, on any device. Without the tree's inputs (a plain forward, e.g.
    scoring a sequence outside training) it is ordinary causal attention over the whole row."""
    import torch

    if softcap:
        from rollgym.errors import UsageError

        raise UsageError("rollgym's CPU tree attention does not implement logit soft-capping (softcap)")
    q, k, v = (x.transpose(1, 2)[0] for x in (query, key, value))  # (tokens, heads, head_dim)
    if tree_kv_index is None:
        out = _segment_attention(q, k, v, scaling, sliding_window)
    else:
        k, v = k.index_select(0, tree_kv_index), v.index_select(0, tree_kv_index)
        qs, ks = tree_cu_seqlens_q.tolist(), tree_cu_seqlens_k.tolist()
        out = torch.cat(
            [
                _segment_attention(
                    q[qs[s] : qs[s + 1]], k[ks[s] : ks[s + 1]], v[ks[s] : ks[s + 1]], scaling, sliding_window
                )
                for s in range(len(qs) - 1)
            ]
        )
    return out.unsqueeze(0), None
