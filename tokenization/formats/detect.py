"""Which models are rendered by their vendor's library: a Mistral directory holding `tekken.json` (mistral-common
reads it), a vocabulary with Harmony's `<|channel|>` and `<|constrain|>` tokens (GPT-OSS, openai-harmony)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rollgym.tokenization.formats.base import FormatTokenizer

HARMONY_TOKENS = ("<|channel|>", "<|constrain|>", "<|start|>", "<|message|>")


def is_harmony_vocabulary(hf: Any) -> bool:
    """Whether a Hugging Face tokenizer has GPT-OSS's Harmony tokens."""
    vocab = hf.get_vocab() if hasattr(hf, "get_vocab") else {}
    return all(token in vocab for token in HARMONY_TOKENS)


def library_tokenizer(directory: str | os.PathLike | None = None, hf: Any = None, **kwargs) -> FormatTokenizer | None:
    """The `FormatTokenizer` a model needs when its reference is a library, else None (its Jinja template is)."""
    from rollgym.tokenization.formats.harmony import HarmonyCodec
    from rollgym.tokenization.formats.mistral import MistralCodec

    tekken = Path(directory) / "tekken.json" if directory is not None else None
    if tekken is not None and tekken.is_file():
        return FormatTokenizer(MistralCodec(tekken), hf, **kwargs)
    if hf is not None and is_harmony_vocabulary(hf):
        return FormatTokenizer(HarmonyCodec(), hf, **kwargs)
    return None
