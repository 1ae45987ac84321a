"""Resolve a model spec or path to a `ChatTokenizer` (shared by the CLI, the loop and the proxy)."""

from __future__ import annotations

import os

from rollgym.engines.default_model import resolve_model_dir
from rollgym.engines.errors import ModelUnavailableError
from rollgym.errors import UsageError
from rollgym.tokenization import ChatTokenizer


class TokenizerNotFoundError(UsageError, FileNotFoundError):
    """No tokenizer could be loaded from what was named."""


def load_chat_tokenizer(spec: str, chat_template: str | os.PathLike | None = None, **kwargs) -> ChatTokenizer:
    """The tokenizer (and template) of `smollm2-135m`, `hf:/dir` or a local directory; clear error otherwise.

    A model whose reference is its vendor's library (Mistral's `tekken.json`, GPT-OSS's Harmony vocabulary) is
    rendered by that library, unless `chat_template` names a Jinja template to use instead."""
    from transformers import AutoTokenizer

    from rollgym.tokenization.formats import library_tokenizer

    target = spec[3:] if spec.startswith("hf:") else spec
    try:
        directory = resolve_model_dir(target)
        if chat_template is None and (directory / "tekken.json").is_file():
            return library_tokenizer(directory, None, **kwargs)  # type: ignore[return-value]  # a tekken.json makes one
        hf = AutoTokenizer.from_pretrained(str(directory))
    except (OSError, ModelUnavailableError) as exc:
        raise TokenizerNotFoundError(f"cannot load a tokenizer from {spec!r}: {exc}") from exc
    if chat_template is None:
        found = library_tokenizer(None, hf, **kwargs)
        if found is not None:
            return found
    return ChatTokenizer(hf, chat_template=chat_template, **kwargs)
