"""Split `<think>...</think>` reasoning from the visible answer."""

from __future__ import annotations


def split_reasoning(text: str, open_tag: str = "<think>", close_tag: str = "</think>") -> tuple[str | None, str]:
    """Return (reasoning or None, visible text).

    Handles a generation prompt that already opened the block (Qwen3.5: the completion holds
    only `...</think>`), and an unterminated block (a truncated completion: all reasoning).
    """
    close = text.find(close_tag)
    if close >= 0:
        head = text[:close]
        opened = head.find(open_tag)
        reasoning = head[opened + len(open_tag) :] if opened >= 0 else head
        return reasoning.strip("\n"), text[close + len(close_tag) :].lstrip("\n")
    opened = text.find(open_tag)
    if opened >= 0:
        return text[opened + len(open_tag) :].strip("\n"), text[:opened].strip("\n")
    return None, text
