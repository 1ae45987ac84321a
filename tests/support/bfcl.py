"""BFCL's ground truth as a model's tool calls, and a scripted policy that makes them turn by turn."""

from __future__ import annotations

import ast
import importlib
import inspect
import json

#: BFCL's multi-turn backends (`bfcl_eval.constants.executable_backend_config`, less the agentic ones)
BACKENDS = (
    "GorillaFileSystem",
    "TwitterAPI",
    "TicketAPI",
    "MessageAPI",
    "MathAPI",
    "VehicleControlAPI",
    "TradingBot",
    "TravelAPI",
)


def tool_call(entry, call: str) -> tuple[str, dict]:
    """A ground-truth call string (`mv(source='a', destination='b')`, arguments may be positional) as the name and
    keyword arguments a function-calling model would send, positional ones named by the backend method's signature."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), call
    name = node.func.id
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    if node.args:
        for class_name in entry.involved_classes:
            backend = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
            if hasattr(backend, name):
                params = [p for p in inspect.signature(getattr(backend, name)).parameters if p != "self"]
                kwargs.update({params[i]: ast.literal_eval(a) for i, a in enumerate(node.args)})
                break
    return name, kwargs


def calls_text(calls: list[tuple[str, dict]]) -> str:
    """One assistant reply making `calls`, in the Hermes form CHATML_TOOLS parses."""
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>" for name, args in calls
    )


def script_of(entry) -> list[str]:
    """The ground truth as replies: per user turn, one reply with the turn's calls (if any), then a text reply."""
    replies = []
    for turn in entry.ground_truth:
        if turn:
            replies.append(calls_text([tool_call(entry, call) for call in turn]))
        replies.append("Done.")
    return replies


def entry_key(first_user: str, tool_names: list[str]) -> str:
    """What tells entries apart in a prompt: the first user message (two entries share one) and the tools' names."""
    return first_user + "|" + ",".join(tool_names)


def scripts_of(entries) -> dict[str, list[str]]:
    """Each entry's script by its `entry_key`."""
    return {entry_key(e.question[0][0]["content"], [f["name"] for f in e.function]): script_of(e) for e in entries}


def scripted_policy(tool_tok, scripts: dict[str, list[str]]):
    """A policy that replies from the script of the entry the prompt shows (`entry_key`), the reply by how many
    assistant turns the prompt has; `scripts`: from `scripts_of`."""
    import rollgym as rg
    from rollgym.engines.scripted import ScriptedEngine

    def reply(prompt_ids, sampling):
        prompt = tool_tok.decode(prompt_ids)
        first_user = prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        index = prompt.count("<|im_start|>assistant") - 1
        tools = prompt.split("\n<tools>\n", 1)[1].split("\n</tools>", 1)[0]
        names = [json.loads(line)["function"]["name"] for line in tools.strip().splitlines()]
        replies = scripts[entry_key(first_user, names)]
        text = replies[index] if index < len(replies) else "Done."
        return tool_tok.encode(text) + [tool_tok.end_of_turn_id]

    return rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)
