"""Resolve a model spec or path to a `ChatTokenizer` (shared by the CLI, the loop and the proxy).

A directory whose tokenizer is the generic fast one (`tokenizer.json`, `tokenizer_class` TokenizersBackend or
PreTrainedTokenizerFast) is loaded with `PreTrainedTokenizerFast` itself: `AutoTokenizer` imports transformers'
model configuration code and, through it, torch (~200 MiB of resident memory in every process that only samples
through a server; benchmarks/bench_peers.py). Any other tokenizer class goes through `AutoTokenizer`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

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
    from rollgym.tokenization.formats import library_tokenizer

    target = spec[3:] if spec.startswith("hf:") else spec
    try:
        directory = resolve_model_dir(target)
        if chat_template is None and (directory / "tekken.json").is_file():
            return library_tokenizer(directory, None, **kwargs)  # type: ignore[return-value]  # a tekken.json makes one
        hf = _hf_tokenizer(directory)
    except (OSError, ModelUnavailableError) as exc:
        raise TokenizerNotFoundError(f"cannot load a tokenizer from {spec!r}: {exc}") from exc
    if chat_template is None:
        found = library_tokenizer(None, hf, **kwargs)
        if found is not None:
            return found
    return ChatTokenizer(hf, chat_template=chat_template, **kwargs)


_GENERIC_FAST = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def _hf_tokenizer(directory: Path):
    """The directory's Hugging Face tokenizer, without importing torch when the generic fast class is the one named."""
    config = directory / "tokenizer_config.json"
    try:
        named = json.loads(config.read_text()).get("tokenizer_class") if config.is_file() else None
    except ValueError:
        named = None
    if named in _GENERIC_FAST and (directory / "tokenizer.json").is_file():
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(str(directory))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory))
