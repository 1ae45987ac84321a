"""Token-exact chat tokenization: prompts rendered once, sampled ids kept verbatim, environment
messages added as bridge tokens, and a certification of (tokenizer, chat template) pairs."""

from rollgym.tokenization.chat_tokenizer import Bridge, ChatTokenizer, ParsedCompletion, TruncationPolicy
from rollgym.tokenization.errors import (
    BridgeError,
    CertificationError,
    InvalidInputError,
    TemplateError,
    TokenizationError,
    TrajectoryStateError,
    UnsupportedFeatureError,
)
from rollgym.tokenization.parsers import ToolCallParseError
from rollgym.tokenization.trajectory import Segment, TokenIds, TokenTrajectory

__all__ = [
    "Bridge",
    "BridgeError",
    "CertificationError",
    "ChatTokenizer",
    "InvalidInputError",
    "ParsedCompletion",
    "Segment",
    "TemplateError",
    "TokenIds",
    "TokenTrajectory",
    "TokenizationError",
    "ToolCallParseError",
    "TrajectoryStateError",
    "TruncationPolicy",
    "UnsupportedFeatureError",
]
