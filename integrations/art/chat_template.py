"""The chat template rollgym renders with, for ART's `_internal_config["chat_template"]`: ART re-renders prompts and
tool results with its tokenizer's template, so with rollgym's they come out as rollgym's ids."""

from __future__ import annotations

from typing import Any

from rollgym.rollouts.policy import certified_tokenizer


def chat_template_of(tokenizer: Any, chat_template: str | None = None) -> str:
    """The template rollgym's certified tokenizer for `tokenizer` (a spec, directory or tokenizer) renders with."""
    return certified_tokenizer(tokenizer, chat_template=chat_template).template
