"""TRL's `AsyncGRPOTrainer` on a CPU (CI, laptops): the two places TRL 1.16 assumes CUDA, and the fix.

- Tree attention: the trainer registers FlashAttention 3's varlen kernel (CUDA only) as `tree_fa3` when it is built;
  here `cpu_tree_attention` (the same math with PyTorch's attention) is registered under that name right after.
- MFU: `get_peak_flops_per_device` asks CUDA for the device's name; on a CPU the peak is unknown (None), which TRL
  already handles by leaving the MFU metrics out.
"""

from __future__ import annotations

import functools
from typing import Any

_PATCHED = "_rollgym_cpu_patch"

#: `AsyncGRPOConfig` settings for training on a CPU against a float32 server: TRL defaults to bf16 autocast (the
#: trainer's logprobs would be ~0.08 off the server's, and its importance ratios with them), and gradient
#: checkpointing recomputes every forward (memory a CPU has; time it has not).
CPU_TRAINING_ARGS = {"use_cpu": True, "bf16": False, "dtype": "float32", "gradient_checkpointing": False}


def patch_async_grpo_for_cpu() -> bool:
    """Make TRL's `AsyncGRPOTrainer` train on a CPU; call it before building the trainer; idempotent. Returns False,
    changing nothing, when CUDA is available (TRL's own kernels are the right ones there)."""
    import torch
    from transformers import AttentionInterface
    from trl.experimental.async_grpo import async_grpo_trainer, packing
    from trl.trainer import utils as trl_utils

    from rollgym.integrations.trl.async_grpo.tree_attention import cpu_tree_attention

    if torch.cuda.is_available():
        return False
    if getattr(async_grpo_trainer, _PATCHED, False):
        return True
    trl_register = packing.register_tree_attention
    trl_peak_flops = trl_utils.get_peak_flops_per_device  # the function the trainer imports from there

    @functools.wraps(trl_register)
    def register() -> None:
        trl_register()  # TRL's name and its mask function (none: the tree holds the mask)
        AttentionInterface.register(packing.TREE_ATTENTION, cpu_tree_attention)

    @functools.wraps(trl_peak_flops)
    def peak_flops(accelerator: Any, dtype: str) -> float | None:
        return trl_peak_flops(accelerator, dtype) if accelerator.device.type == "cuda" else None

    # TRL's module globals, replaced on purpose (the trainer looks both up when it is built)
    async_grpo_trainer.register_tree_attention = register  # pyright: ignore[reportPrivateImportUsage]  # replaced on purpose (above)
    async_grpo_trainer.get_peak_flops_per_device = peak_flops  # pyright: ignore[reportPrivateImportUsage]  # replaced on purpose (above)
    setattr(async_grpo_trainer, _PATCHED, True)
    return True
