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
    """The tokenizer (and template) of `smollm2-135m`, `hf:/dir` or a local directory; clear error otherwise."""
    target = spec[3:] if spec.startswith("hf:") else spec
    try:
        return ChatTokenizer.from_pretrained(resolve_model_dir(target), chat_template=chat_template, **kwargs)
    except (OSError, ModelUnavailableError) as exc:
        raise TokenizerNotFoundError(f"cannot load a tokenizer from {spec!r}: {exc}") from exc
