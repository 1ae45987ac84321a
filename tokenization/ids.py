"""`IdSeq`: token ids that behave like rendered text where certification compares renders.

A Jinja template renders text; a library reference (openai-harmony, mistral-common) renders ids. Certification
slices, joins and prefix-compares renders; `IdSeq` gives ids the same operations (`startswith`, `find`, slices
and `+` that stay `IdSeq`), so one replay serves both kinds of reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import SupportsIndex, overload


class IdSeq(tuple[int, ...]):
    """An immutable run of token ids with the string operations certification uses."""

    __slots__ = ()

    @overload
    def __getitem__(self, key: SupportsIndex) -> int: ...
    @overload
    def __getitem__(self, key: slice) -> IdSeq: ...
    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return IdSeq(item) if isinstance(key, slice) else item

    def __add__(self, other: Sequence[int]) -> IdSeq:  # type: ignore[override]  # tuple's __add__ is wider; ids join ids
        return IdSeq(tuple.__add__(self, tuple(other)))

    def startswith(self, prefix: Sequence[int]) -> bool:
        return len(prefix) <= len(self) and tuple.__getitem__(self, slice(0, len(prefix))) == tuple(prefix)

    def find(self, sub: Sequence[int], start: int = 0) -> int:
        """The first index of `sub` at or after `start`, or -1 (as `str.find`)."""
        sub = tuple(sub)
        if not sub:
            return start if start <= len(self) else -1
        first = sub[0]
        for at in range(start, len(self) - len(sub) + 1):
            if tuple.__getitem__(self, at) == first and tuple.__getitem__(self, slice(at, at + len(sub))) == sub:
                return at
        return -1

    def rfind(self, sub: Sequence[int]) -> int:
        """The last index of `sub`, or -1 (as `str.rfind`)."""
        sub = tuple(sub)
        for at in range(len(self) - len(sub), -1, -1):
            if tuple.__getitem__(self, slice(at, at + len(sub))) == sub:
                return at
        return -1
