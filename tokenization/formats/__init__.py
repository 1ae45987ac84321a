"""Families whose reference is a library, not a Jinja template: GPT-OSS (`openai-harmony`), Mistral (`mistral-common`)."""

from rollgym.tokenization.formats.base import FormatTokenizer, MessageCodec
from rollgym.tokenization.formats.detect import is_harmony_vocabulary, library_tokenizer
from rollgym.tokenization.formats.harmony import HarmonyCodec
from rollgym.tokenization.formats.mistral import MistralCodec, mistral_call_id

__all__ = [
    "FormatTokenizer",
    "HarmonyCodec",
    "MessageCodec",
    "MistralCodec",
    "is_harmony_vocabulary",
    "library_tokenizer",
    "mistral_call_id",
]
