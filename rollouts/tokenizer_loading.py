"""Resolve a model spec or path to its tokenizer (shared by the CLI, the loop and the proxy): the model NAME
(`smollm2-135m`, `hf:/dir`, a cached hub id) becomes a directory here, where the engines layer is known; the
directory is loaded by the tokenization layer's one route (`rollgym.tokenization.loading.load_tokenizer`)."""

from __future__ import annotations

import os

from rollgym.engines.default_model import embedded_tool_parser, resolve_model_dir
from rollgym.engines.errors import ModelUnavailableError
from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.loading import TokenizerNotFoundError, load_tokenizer

__all__ = ["TokenizerNotFoundError", "load_chat_tokenizer"]


def load_chat_tokenizer(spec: str, chat_template: str | os.PathLike | None = None, **kwargs) -> ChatTokenizer:
    """The tokenizer (and template) of `smollm2-135m`, `hf:/dir` or a local directory; clear error otherwise.

    A model whose reference is its vendor's library (Mistral's `tekken.json`, GPT-OSS's Harmony vocabulary) is
    rendered by that library, unless `chat_template` names a Jinja template to use instead. An embedded model that
    writes its calls its own way gets its parser (`embedded_tool_parser`) unless `tool_parser=` names another."""
    target = spec[3:] if spec.startswith("hf:") else spec
    try:
        directory = resolve_model_dir(target)
    except (OSError, ModelUnavailableError) as exc:
        raise TokenizerNotFoundError(f"cannot load a tokenizer from {spec!r}: {exc}") from exc
    parser = embedded_tool_parser(directory)  # a name resolves to the embedded model's own directory
    if parser and chat_template is None:
        kwargs.setdefault("tool_parser", parser)
    try:
        return load_tokenizer(directory, chat_template, **kwargs)
    except TokenizerNotFoundError as exc:  # named by what the caller wrote, not the directory it resolved to
        raise TokenizerNotFoundError(f"cannot load a tokenizer from {spec!r}: {exc.__cause__}") from exc.__cause__
