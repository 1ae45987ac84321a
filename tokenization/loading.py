"""One way to load a model directory's `ChatTokenizer`: the route its files call for.

A Mistral directory (`tekken.json`) and a GPT-OSS vocabulary (Harmony's tokens) are rendered by their vendors'
libraries (`tokenization.formats`); any other directory by its Jinja template. A tokenizer whose class is the generic
fast one (`tokenizer.json`, `tokenizer_class` TokenizersBackend or PreTrainedTokenizerFast) is loaded with
`PreTrainedTokenizerFast` itself: `AutoTokenizer` imports transformers' model configuration code and, through it,
torch (~200 MiB of resident memory in every process that only samples through a server; benchmarks/bench_peers.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rollgym.errors import UsageError
from rollgym.tokenization.chat_tokenizer import ChatTokenizer


class TokenizerNotFoundError(UsageError, FileNotFoundError):
    """No tokenizer could be loaded from what was named."""


def load_tokenizer(path: str | os.PathLike, chat_template: str | os.PathLike | None = None, **kwargs) -> ChatTokenizer:
    """The tokenizer of a model directory (or hub id, when a hub is reachable): a library-backed `FormatTokenizer` for
    a Mistral or GPT-OSS model, else a `ChatTokenizer` over its Jinja template; `chat_template` names a Jinja template
    to use instead (also for those two). `kwargs` go to the tokenizer (`truncation`, `extra_stop_token_ids`)."""
    from rollgym.tokenization.formats import library_tokenizer

    try:
        if chat_template is None and (Path(path) / "tekken.json").is_file():
            return library_tokenizer(path, None, **kwargs)  # type: ignore[return-value]  # a tekken.json makes one
        hf = hf_tokenizer(path)
    except OSError as exc:
        raise TokenizerNotFoundError(f"cannot load a tokenizer from {str(path)!r}: {exc}") from exc
    if chat_template is None:
        found = library_tokenizer(None, hf, **kwargs)
        if found is not None:
            return found
    return ChatTokenizer(hf, chat_template=chat_template, **kwargs)


_GENERIC_FAST = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def hf_tokenizer(path: str | os.PathLike) -> Any:
    """The directory's Hugging Face tokenizer, without importing torch when the generic fast class is the one named."""
    directory = Path(path)
    config = directory / "tokenizer_config.json"
    try:
        named = json.loads(config.read_text()).get("tokenizer_class") if config.is_file() else None
    except ValueError:
        named = None
    if named in _GENERIC_FAST and (directory / "tokenizer.json").is_file():
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(str(directory))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))
