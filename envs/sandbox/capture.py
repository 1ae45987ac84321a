"""Bounded output capture: keep head and tail bytes of a stream, then decode it for a model."""

from __future__ import annotations

import re

_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


class HeadTailBuffer:
    """Keeps the first and last `limit // 2` bytes of everything fed, and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit // 2, 0)
        self.tail_limit = max(limit - self.head_limit, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def elided(self) -> int:
        return self.total - len(self.head) - len(self.tail)


def clean_text(data: bytes) -> str:
    """Bytes to model-ready text: ANSI escapes stripped, CRLF normalised, invalid UTF-8 replaced."""
    data = _ANSI.sub(b"", data).replace(b"\r\n", b"\n")
    return data.decode("utf-8", errors="replace")


def render_output(head: bytes, tail: bytes, elided: int) -> str:
    """Join head and tail, stating how many bytes were elided between them."""
    if elided <= 0:
        return clean_text(head + tail)
    return f"{clean_text(head)}\n[... {elided} bytes of output elided ...]\n{clean_text(tail)}"
