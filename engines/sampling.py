"""Batched logits processing and sampling with per-row parameters and per-row generators.

Same order and semantics as vLLM's sampler (temperature, then top-k, then top-p over an
ascending sort: vllm/v1/sample/ops/topk_topp_sampler.py `apply_top_k_top_p`) and as
transformers' Temperature/TopK/TopP logits warpers, so `processed_logprobs` means the same here.
"""

from __future__ import annotations

import torch


def processed_logprobs(
    logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
) -> torch.Tensor:
    """Log-softmax of `logits` [B, V] after temperature, top-k and top-p; masked tokens get -inf.

    Rows with temperature 0 are greedy: they get the plain log-softmax of the raw logits (no
    temperature, top-k or top-p, as vLLM ignores them for greedy requests).
    """
    greedy = temperature <= 0
    scaled = logits / torch.where(greedy, torch.ones_like(temperature), temperature).unsqueeze(1)
    vocab = scaled.shape[-1]
    use_k = (top_k > 0) & (top_k < vocab) & ~greedy
    use_p = (top_p < 1.0) & ~greedy
    if bool(use_k.any()) or bool(use_p.any()):
        sorted_x, order = scaled.sort(dim=-1, descending=False)
        if bool(use_k.any()):
            k = torch.where(use_k, top_k, torch.full_like(top_k, vocab))
            kth_largest = sorted_x.gather(1, (vocab - k).unsqueeze(1))
            sorted_x = sorted_x.masked_fill(sorted_x < kth_largest, float("-inf"))
        if bool(use_p.any()):
            cumulative = sorted_x.softmax(dim=-1).cumsum(dim=-1)
            # rows without top-p get a threshold no cumulative mass can fall below
            threshold = torch.where(use_p, 1.0 - top_p, torch.full_like(top_p, -1.0)).unsqueeze(1)
            drop = cumulative <= threshold
            drop[:, -1] = False  # always keep the most likely token
            sorted_x = sorted_x.masked_fill(drop, float("-inf"))
        scaled = torch.empty_like(scaled).scatter_(1, order, sorted_x)
    return scaled.log_softmax(dim=-1)


def sample_rows(logprobs: torch.Tensor, greedy: torch.Tensor, generators: list[torch.Generator]) -> torch.Tensor:
    """Pick one id per row: argmax for greedy rows, else an exponential race with that row's generator.

    `argmax(p / q)` with `q ~ Exp(1)` draws from `p` (the trick vLLM's sampler uses); one generator
    per row keeps a seeded request's draws independent of its batch neighbours.
    """
    picked = logprobs.argmax(dim=-1)
    probs = logprobs.exp()
    for row, generator in enumerate(generators):
        if bool(greedy[row]):
            continue
        q = torch.empty(probs.shape[-1], dtype=probs.dtype, device=probs.device).exponential_(generator=generator)
        picked[row] = (probs[row] / q).argmax()
    return picked
