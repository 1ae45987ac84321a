"""A model's turn as its reference writes it: what certification replays and what tests script a model with.

For most templates it is what rendering the turn appends to the prompt before it, through the stop token. Some
templates re-render history when the turn is added (Kimi K2 Thinking drops earlier reasoning, DeepSeek R1's
writes whitespace only at the generation prompt): the turn is then found from the end of the render.
"""

from __future__ import annotations

from typing import Any


def canonical_turn(tok, conv: list[dict], i: int, tools, kw: dict) -> Any:
    """The rendering the model emits for assistant message `i` of `conv` (through its stop token), or None when
    the template renders that turn unlike its own generation prompt."""
    before = tok.rendering(conv[:i], tools, True, **kw)
    upto = tok.rendering(conv[: i + 1], tools, False, **kw)
    if upto.startswith(before):
        text = upto[len(before) :]
    else:  # adding the turn re-rendered history: find the turn from the end
        text = _turn_from_end(tok, conv[:i], upto, before, tools, kw)
        if not text:
            return None
    hits = [(text.find(s), s) for s in tok.stop_pieces if text.find(s) >= 0]
    if hits:
        at, s = min(hits)
        return text[: at + len(s)]
    if i + 1 < len(conv):  # GLM: the stop token is the next role's opening token
        nxt = tok.rendering(conv[: i + 2], tools, i + 2 == len(conv), **kw)
        if nxt.startswith(upto):
            tail = nxt[len(upto) :]
            for s in tok.stop_pieces:
                if tail.startswith(s):
                    return text + s
    return text


def _turn_from_end(tok, history: list[dict], upto, before, tools, kw):
    """The last turn of `upto` (a render ending with an assistant turn): what follows the last occurrence of the
    longest head of the generation prompt that `upto` contains (`<｜Assistant｜>` of `<｜Assistant｜><think>\\n`)."""
    base = tok.rendering(history, tools, False, **kw)
    prompt = before[len(base) :] if before.startswith(base) else before[:0]
    for k in _piece_ends(tok, prompt):
        at = upto.rfind(prompt[:k]) if k else -1
        if at >= 0:
            return upto[at + k :]
    # No generation prompt of its own (DeepSeek R1's vLLM template after tool outputs): what follows the longest
    # prefix the prompt and the render share, less what the prompt already wrote there.
    k = 0
    while k < min(len(before), len(upto)) and before[k] == upto[k]:
        k += 1
    turn, written = upto[k:], before[k:]
    if isinstance(written, str) and written.strip() and turn.lstrip().startswith(written.strip()):
        turn = turn.lstrip()[len(written.strip()) :]
    return turn


def _piece_ends(tok, prompt) -> list[int]:
    """Where a head of a generation prompt may end, longest first: after a special token or a newline (a character
    in the middle of a token is no boundary), or anywhere in ids."""
    if not isinstance(prompt, str):
        return list(range(len(prompt), 0, -1))
    ends = {len(prompt)}
    for piece in [*tok.special_vocab, "\n"]:
        at = prompt.find(piece)
        while at >= 0:
            ends.add(at + len(piece))
            at = prompt.find(piece, at + 1)
    return sorted(ends, reverse=True)
