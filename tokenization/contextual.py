"""Bridges for templates that render an environment message according to the whole conversation.

Command's template numbers each tool result by its call's position among all the conversation's calls, so a bridge
rendered after the fixed dummy context would say "0" where the conversation says "3". For such templates (found by
`renders_by_history`) a bridge is rendered after the real history, compacted to what the numbering needs: the
system message, the earlier calls with empty arguments, the last turn. Certification checks the result in context.
"""

from __future__ import annotations

from rollgym.tokenization.chat_tokenizer import Bridge
from rollgym.tokenization.errors import BridgeError, TokenizationError, UnsupportedFeatureError
from rollgym.tokenization.messages import make_tool_call


def renders_by_history(tok) -> bool:
    """Whether a tool result after a real tool-call turn renders unlike the bridge after the dummy context."""
    if tok.parser is None or not tok.tool_role_supported:
        return False
    call = make_tool_call("rollgym_probe_tool", {"x": "1"}, "call_7")
    conv = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_7", "name": "rollgym_probe_tool", "content": "x"},
    ]
    try:
        text = tok.canonical_completion(conv, 1)
        full = tok.render(conv, None, True)
        closing = tok._closing(conv[2:], None, {})[1]
    except TokenizationError:
        return False
    if not text:
        return False
    last = tok.encode(text)[-1]
    return not full.endswith(closing[tok._stop_cut(closing, last) :])  # the bridge is not what follows the turn


def history_bridge(tok, history: list[dict], new_messages: list[dict], last_id, tools, template_kwargs: dict) -> Bridge:
    """The bridge after `history` (ending with the turn the model just sampled) that introduces `new_messages`."""
    if last_id is None or last_id not in tok.stop_token_ids:
        raise UnsupportedFeatureError(
            "this template renders environment messages according to the whole conversation, so a turn that "
            "did not end with a stop token (a truncated one) cannot be continued: use truncation='end'"
        )
    tail = _tail(tok, _compact(history), new_messages, tools, template_kwargs)
    if tail is None:
        raise BridgeError("the template re-rendered the conversation's history; cannot bridge after it")
    return Bridge(ids=tok.encode(tail), closed_turn=False)


def _tail(tok, history: list[dict], new_messages: list[dict], tools, template_kwargs: dict) -> str | None:
    """The text after the stop token that ends `history`'s last assistant turn, in a render of `history` plus
    `new_messages`; None when that render does not extend the render of `history` (the template rewrote it)."""
    hist = tok.render(history, tools, False, **template_kwargs)
    ends = [hist.rfind(s) + len(s) for s in tok.stop_pieces if hist.rfind(s) >= 0]
    hist = hist[: max(ends)] if ends else hist  # what follows the last stop may be a generation prompt
    full = tok.render(list(history) + list(new_messages), tools, True, **template_kwargs)
    return full[len(hist) :] if full.startswith(hist) else None


def _compact(history: list[dict]) -> list[dict]:
    """What the bridge needs of `history`, at a size that does not grow with its text: the leading system message,
    every earlier tool call in order (their ids: results are numbered by call position) with empty arguments,
    and the last assistant turn as it is."""
    last = max((i for i, m in enumerate(history) if m.get("role") == "assistant"), default=-1)
    if last < 0:
        return list(history)
    head = [history[0]] if history[0].get("role") in ("system", "developer") else []
    calls = [
        {**c, "function": {**(c.get("function") or {}), "arguments": "{}"}}
        for m in history[:last]
        for c in m.get("tool_calls") or []
    ]
    earlier = [{"role": "assistant", "content": "", "tool_calls": calls}] if calls else []
    return [*head, {"role": "user", "content": "..."}, *earlier, history[last]]
