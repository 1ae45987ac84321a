"""Fixtures for the engine tests: the real default model, loaded once per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smollm2_engine():
    """A TransformersEngine on the real SmolLM2-135M-Instruct (the embedded default model)."""
    from rollgym.engines.transformers_engine import TransformersEngine

    return TransformersEngine("smollm2-135m")


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    from transformers import AutoTokenizer

    from rollgym.engines.default_model import smollm2_dir

    return AutoTokenizer.from_pretrained(str(smollm2_dir()))


@pytest.fixture(scope="session")
def prompts(smollm2_tokenizer):
    """Prompts of different lengths, so batches need left padding."""
    texts = [
        "The capital of France is",
        "Once upon a time, in a faraway land, there lived",
        "def fibonacci(n):",
        "List three colours:",
    ]
    return [smollm2_tokenizer(t)["input_ids"] for t in texts]
