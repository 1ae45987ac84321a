"""`SegmentedEncoder`: encodes rendered chat text piece by piece between special tokens, caching pieces.

A fast tokenizer first cuts its input at added tokens (`<|im_start|>`, `<tool_call>`, ...) and then
tokenizes each piece on its own, so encoding the pieces separately gives the same ids. Rendered chats
repeat most pieces (the system prompt with its tool schemas, `assistant\\n`, ...), so a cache of piece
ids turns most of each encode into dictionary lookups. The equivalence is checked when the encoder is
built, and the encoder refuses tokenizers where it might not hold (added tokens that strip spaces or
match whole words, tokenizers whose pre-tokenizer depends on where a piece starts).
"""

from __future__ import annotations

import re

#: Texts whose piece-wise encoding must equal the whole encoding for the encoder to be used.
_PROBE_PIECES = [
    "Hello world",
    " leading space",
    "\n\nnewlines\n",
    "  two spaces",
    "x",
    "1234567 89",
    "naïve 日本語 🙂",
    "tab\tend ",
    "'s 're",
    "<not special>",
    "",
]


GIL_FREE_CHARS = 65_536  # texts this long are encoded with the GIL released (another thread keeps running)


def encode_text(backend, text: str) -> list[int]:
    """The Rust tokenizer's ids for `text`. `encode` holds the GIL (8 MB of text: ~8 s with every other
    Python thread stopped); `encode_batch` releases it and gives the same ids, so long texts use that."""
    if len(text) >= GIL_FREE_CHARS:
        return backend.encode_batch([text], add_special_tokens=False)[0].ids
    return backend.encode(text, add_special_tokens=False).ids


class SegmentedEncoder:
    """`encode(text)` equal to `backend.encode(text, add_special_tokens=False).ids`, with piece caching."""

    def __init__(self, backend, max_entries: int = 8192, max_piece_chars: int = 65536):
        self._backend = backend
        self._max_entries, self._max_piece_chars = max_entries, max_piece_chars
        self._cache: dict[str, list[int]] = {}
        tokens = backend.get_added_tokens_decoder()  # id -> AddedToken
        if any(t.lstrip or t.rstrip or t.single_word for t in tokens.values() if not t.normalized):
            raise ValueError("an added token strips surrounding spaces or matches whole words only")
        raw = {t.content: i for i, t in tokens.items() if not t.normalized and t.content}
        self._ids = raw
        # Longest first: Python's alternation takes the first that matches, the tokenizer the longest.
        alternatives = sorted(raw, key=len, reverse=True)
        self._splitter = re.compile("(" + "|".join(map(re.escape, alternatives)) + ")") if alternatives else None
        self._check()

    @classmethod
    def for_backend(cls, backend) -> SegmentedEncoder | None:
        """An encoder for this Rust tokenizer, or None when piece-wise encoding is not provably the same."""
        try:
            return cls(backend)
        except (ValueError, AttributeError):
            return None

    def _whole(self, text: str) -> list[int]:
        return encode_text(self._backend, text)

    def _check(self) -> None:
        specials = sorted(self._ids, key=len)[:3]
        joins = specials or [""]
        probes = list(_PROBE_PIECES)
        for special in joins:
            probes += [special.join(_PROBE_PIECES[i : i + 3]) for i in range(0, len(_PROBE_PIECES), 2)]
            probes += [special + p for p in _PROBE_PIECES] + [p + special for p in _PROBE_PIECES]
        for text in probes:
            if self.encode(text, cache=False) != self._whole(text):
                raise ValueError(f"piece-wise encoding differs from whole encoding for {text!r}")

    def encode(self, text: str, cache: bool = True) -> list[int]:
        if self._splitter is None:
            return list(self._piece(text, cache))
        ids: list[int] = []
        parts = self._splitter.split(text)
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self._ids[part])
            elif part:
                ids += self._piece(part, cache)
        return ids

    def _piece(self, text: str, cache: bool) -> list[int]:
        ids = self._cache.get(text) if cache else None
        if ids is None:
            ids = self._whole(text)
            if cache and len(text) <= self._max_piece_chars:
                if len(self._cache) >= self._max_entries:
                    try:
                        del self._cache[next(iter(self._cache))]  # the oldest entry
                    except (KeyError, RuntimeError, StopIteration):  # another thread got there first
                        pass
                self._cache[text] = ids
        return ids
