"""OpenAI-format chat messages: normalisation for templates and tool-call construction."""

from __future__ import annotations

import json
import os
import random
from typing import Any

#: Tool-call ids need to be unique, not secret: a private generator (seeded from the OS, re-seeded in forked
#: children) is much cheaper than a system call per id, and leaves the user's `random` state alone.
_IDS = random.Random()
os.register_at_fork(after_in_child=_IDS.seed)


def new_tool_call_id() -> str:
    """A fresh OpenAI-style tool call id (96 random bits, as 24 hex digits)."""
    return f"call_{_IDS.getrandbits(96):024x}"


#: `json.dumps(x, ensure_ascii=False)` builds a new encoder per call; this one is built once.
_JSON = json.JSONEncoder(ensure_ascii=False)


def make_tool_call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    """An OpenAI-format tool call; `arguments` is serialised to a JSON string as the API does."""
    return {
        "id": call_id or new_tool_call_id(),
        "type": "function",
        "function": {"name": name, "arguments": _JSON.encode(arguments)},
    }


def normalize_for_template(messages: list[dict[str, Any]], string_arguments: bool = False) -> list[dict[str, Any]]:
    """Copy messages into the shape chat templates expect.

    Tool-call arguments become dicts (templates iterate or `tojson` them, as vLLM and
    transformers pass them), or stay JSON strings for templates that concatenate them (DeepSeek's;
    `string_arguments`), `content=None` becomes "", and empty `tool_calls` are dropped
    (Llama 3.1 treats the mere key as a tool-call turn).
    """
    out = []
    for msg in messages:
        m = dict(msg)
        if m.get("content") is None:
            m["content"] = ""
        calls = m.get("tool_calls")
        if not calls:
            m.pop("tool_calls", None)
        else:
            fixed = []
            for call in calls:
                call = dict(call)
                fn = dict(call.get("function") or {})
                args = fn.get("arguments")
                if string_arguments:
                    if not isinstance(args, str):
                        fn["arguments"] = _JSON.encode(args if args is not None else {})
                elif isinstance(args, str):
                    try:
                        fn["arguments"] = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError:
                        pass  # leave it: the template shows what the model wrote
                call["function"] = fn
                fixed.append(call)
            m["tool_calls"] = fixed
        out.append(m)
    return out
