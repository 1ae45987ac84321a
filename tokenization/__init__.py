"""Token-exact chat tokenization: prompts rendered once, sampled ids kept verbatim, environment
messages added as bridge tokens, and a certification of (tokenizer, chat template) pairs."""

from .chat_tokenizer import Bridge, ChatTokenizer, ParsedCompletion, TruncationPolicy
from .errors import (BridgeError, CertificationError, InvalidInputError, TemplateError, TokenizationError,
                     TrajectoryStateError, UnsupportedFeatureError)
from .parsers import ToolCallParseError
from .trajectory import Segment, TokenIds, TokenTrajectory

__all__ = [
    "Bridge", "BridgeError", "CertificationError", "ChatTokenizer", "InvalidInputError", "ParsedCompletion", "Segment", "TemplateError",
    "TokenIds", "TokenTrajectory", "TokenizationError", "ToolCallParseError", "TrajectoryStateError", "TruncationPolicy",
    "UnsupportedFeatureError",
]
