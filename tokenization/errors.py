"""Errors of the tokenization layer: each says what went wrong and what to do about it.

`TokenizationError` is rooted in `rollgym.errors` (the one error tree, a module that imports nothing).
"""

from rollgym.errors import TokenizationError


class InvalidInputError(TokenizationError, ValueError, TypeError):
    """The caller passed something the tokenizer cannot use (ids, logprobs, messages, options)."""


class TemplateError(TokenizationError):
    """The chat template refused or could not render a conversation."""


class UnsupportedFeatureError(TokenizationError):
    """The (tokenizer, template) pair cannot express what was asked (tools, a role, several tool calls)."""


class BridgeError(TokenizationError):
    """Bridge tokens could not be computed safely (a prefix or boundary assertion failed)."""


class TrajectoryStateError(TokenizationError):
    """A trajectory method was called in the wrong order, or after the trajectory ended."""


class CertificationError(TokenizationError):
    """A (tokenizer, template) pair failed certification; the message names the failing probe."""


__all__ = [
    "BridgeError",
    "CertificationError",
    "InvalidInputError",
    "TemplateError",
    "TokenizationError",
    "TrajectoryStateError",
    "UnsupportedFeatureError",
]
