"""The embedded default model is an ordinary trainable fp32 Hugging Face model, cached once."""

from __future__ import annotations

import json

import pytest
import torch

from rollgym.engines.default_model import DEFAULT_MODEL, resolve_model_dir, smollm2_dir

pytestmark = pytest.mark.slow


def test_default_name_resolves_to_the_cached_directory():
    directory = smollm2_dir()
    assert resolve_model_dir(DEFAULT_MODEL) == directory
    assert (directory / ".complete").exists() and (directory / "tokenizer.json").exists()
    config = json.loads((directory / "config.json").read_text())
    assert "quantization_config" not in config  # the GGUF quantization state was dropped
    assert config["architectures"] == ["LlamaForCausalLM"] and config["vocab_size"] == 49152


def test_loaded_default_model_is_fp32_and_trainable(smollm2_engine):
    model = smollm2_engine._model
    assert getattr(model, "hf_quantizer", None) is None
    params = list(model.parameters())
    assert all(p.dtype == torch.float32 and p.requires_grad for p in params)
    assert sum(p.numel() for p in params) > 100_000_000  # ~135M parameters (tied embeddings counted once)
