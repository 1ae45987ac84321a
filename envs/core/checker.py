"""`check_env`: gymnasium's environment checker, then rollgym's own contract for chat environments."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import gymnasium
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from rollgym.envs.core.errors import EnvCheckError
from rollgym.envs.core.spaces import message_problem
from rollgym.envs.core.tools import ToolCallRecord
from rollgym.envs.core.wrappers import inner_env

_TEXT_REPLY = {"role": "assistant", "content": "I am done."}


def _live_sandboxes() -> set[int]:
    """Ids of the sandboxes this process holds open (none when the sandbox layer was never imported)."""
    lifecycle = sys.modules.get("rollgym.envs.sandbox.lifecycle")
    return {id(s) for s in list(lifecycle._LIVE)} if lifecycle is not None else set()


def _fail(what: str) -> EnvCheckError:
    return EnvCheckError(f"check_env: {what}")


def _check_reset(messages: Any, info: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise _fail(f"reset() must return a non-empty list of chat messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        problem = message_problem(message, ("system", "user"))
        if problem:
            raise _fail(f"reset() message {i} is not a system or user chat message: {problem}")
    if not isinstance(info, dict):
        raise _fail(f"reset() info must be a dict, got {type(info).__name__}")
    if not isinstance(info.get("task_id"), str):
        raise _fail("reset() info must carry 'task_id' (a string)")
    tools = info.get("tools")
    if not isinstance(tools, list):
        raise _fail("reset() info must carry 'tools' (a list of OpenAI tool schemas)")
    names = []
    for schema in tools:
        fn = schema.get("function") if isinstance(schema, dict) else None
        if schema.get("type") != "function" or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _fail(
                f"a tool schema must be {{'type': 'function', 'function': {{'name', ...}}}}, got {schema!r}"[:300]
            )
        if not fn.get("description") or fn["description"] == fn["name"]:  # `Tool` falls back to the name
            raise _fail(f"tool {fn['name']!r} has no description (the model reads it): add a docstring")
        params = fn.get("parameters")
        if not isinstance(params, dict) or params.get("type") != "object":
            raise _fail(f"tool {fn['name']!r} needs a JSON-schema object of parameters")
        names.append(fn["name"])
    if len(set(names)) != len(names):
        raise _fail(f"tool names must be unique, got {names}")


def _check_step(result: Any) -> None:
    if not isinstance(result, tuple) or len(result) != 5:
        raise _fail("step() must return (messages, reward, terminated, truncated, info)")
    messages, reward, terminated, truncated, info = result
    if not isinstance(messages, list):
        raise _fail(f"step() must return a list of chat messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        problem = message_problem(message, ("system", "user", "tool"))
        if problem:
            raise _fail(f"step() message {i} is not an environment chat message: {problem}")
    if not isinstance(reward, float):
        raise _fail(f"step() reward must be a float, got {type(reward).__name__}")
    if type(terminated) is not bool or type(truncated) is not bool:
        raise _fail("step() terminated and truncated must be bools")
    calls = info.get("tool_calls", [])
    if not all(isinstance(c, ToolCallRecord) for c in calls):
        raise _fail("step() info['tool_calls'] must hold ToolCallRecord objects")
    components = info.get("reward_components", {})
    if not isinstance(components, dict) or not all(isinstance(v, (int, float)) for v in components.values()):
        raise _fail("step() info['reward_components'] must map names to numbers")
    if "error" in info and not isinstance(info["error"], BaseException):
        raise _fail("step() info['error'] must be the exception itself, not text")


def check_env(env: gymnasium.Env, *, task: dict | None = None) -> None:
    """Check `env` with gymnasium's checker (its warnings count as failures), then rollgym's contract:
    reset gives chat messages, a task id and tool schemas with descriptions; step returns typed
    values; close is idempotent and leaves no sandbox open. Raises `EnvCheckError` naming the problem.

    `task`: the task every reset uses, gymnasium's checks included (default: the environment's own choice). The environment
    under gymnasium's wrappers is checked; a wrapper rollgym cannot apply raises `UsageError` naming it.
    """
    raw = inner_env(env)  # a wrapper rollgym cannot apply is refused (UsageError), not checked around
    for name in ("areset", "astep", "aclose"):
        if not callable(getattr(raw, name, None)):
            raise _fail(f"{type(raw).__name__} has no async {name}(): subclass rollgym.Env")
    before = _live_sandboxes()
    if task is not None:  # an environment without default tasks (task folders) is checked on this one throughout
        own_reset = raw.reset

        def reset_on_task(*, seed: int | None = None, options: dict | None = None):
            return own_reset(seed=seed, options=options or {"task": task})

        raw.reset = reset_on_task
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gymnasium_check_env(raw, skip_render_check=True)
        problems = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        if problems:
            raise _fail("gymnasium's checker warned: " + " | ".join(problems)[:2000])
    except AssertionError as exc:
        if isinstance(exc, EnvCheckError):
            raise
        raise _fail(f"gymnasium's checker failed: {exc}") from exc
    finally:
        vars(raw).pop("reset", None)  # the class's own reset again
    try:
        messages, info = raw.reset(seed=0, options={"task": task} if task is not None else None)
        _check_reset(messages, info)
        _check_step(raw.step(dict(_TEXT_REPLY)))
    finally:
        raw.close()
    raw.close()  # idempotent: a second close must not raise
    leaked = _live_sandboxes() - before
    if leaked:
        raise _fail(f"{len(leaked)} sandbox(es) still open after close()")
