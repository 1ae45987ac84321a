"""`rg.trl_environment(env)`: a rollgym environment as an `environment_factory` for TRL's `GRPOTrainer` and
`AsyncGRPOTrainer`, so it runs even inside TRL's own tool loop.

The factory is a class made once per environment: one method per tool of the environment, with the signature and
Google-style docstring TRL turns into the tool's schema (built from the rollgym tool's own JSON schema); `reset(**row)`
starts an episode on the row (its columns but `prompt` are the task) and returns the environment's first messages as
text (TRL appends it to the row's prompt); a tool call is one `step` of the environment with that one call;
`get_reward()` is the reward the environment ended the episode with, or (the model stopped calling tools) its
`compute_reward`. Each instance keeps its environment between episodes, as TRL reuses instances; the environment (a
sandbox) is released when the instance is garbage-collected or the process exits. TRL calls `reset` and sync tools
outside any event loop (directly, or in a thread pool), which is how `Env.reset` and `Env.step` run.
"""

from __future__ import annotations

import inspect
import json
import uuid
import weakref
from typing import Any

from rollgym.envs.core.env import Env
from rollgym.envs.core.errors import EpisodeStateError
from rollgym.envs.core.registration import make
from rollgym.envs.core.wrappers import inner_env_and_step_limit
from rollgym.errors import UsageError

#: JSON schema types and the Python types TRL's schema reader maps back to them.
_PY_TYPES: dict[str, type] = {
    "integer": int,
    "number": float,
    "string": str,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _made(env_id: str, env_kwargs: dict[str, Any]) -> tuple[Env, int | None]:
    """The rollgym environment `env_id` names, out of gymnasium's wrappers (TRL's calls drive it directly), and the
    step limit of a `TimeLimit` among them; a wrapper rollgym cannot apply raises `UsageError` naming it."""
    made = make(env_id, **env_kwargs)
    try:
        env, max_steps = inner_env_and_step_limit(made)
    except UsageError:
        made.close()
        raise
    if not isinstance(env, Env):
        made.close()
        raise UsageError(f"{env_id!r} makes a {type(env).__name__}, not a rollgym Env: trl_environment needs one")
    return env, max_steps


def _method(schema: dict) -> Any:
    """A method named after a tool, whose signature and docstring carry the tool's JSON schema."""
    fn = schema.get("function", schema)
    name, params = fn["name"], fn.get("parameters") or {}
    properties, required = params.get("properties") or {}, set(params.get("required") or [])

    def tool(self: TRLEnvironmentBase, **arguments: Any) -> str:
        return self._call(name, arguments)

    args = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    docs = []
    for arg, spec in properties.items():
        kind = _PY_TYPES.get(str(spec.get("type")), str)
        annotations[arg] = kind
        default = inspect.Parameter.empty if arg in required else spec.get("default")
        args.append(inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind))
        docs.append(f"    {arg}: {spec.get('description') or spec.get('title') or arg}")
    annotations["return"] = str
    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = inspect.Signature(args, return_annotation=str)  # pyright: ignore[reportFunctionMemberAccess]  # read by inspect.signature
    tool.__annotations__ = annotations
    description = fn.get("description") or name
    tool.__doc__ = description + ("\n\nArgs:\n" + "\n".join(docs) if docs else "") + "\n\nReturns:\n    The result."
    return tool


class TRLEnvironmentBase:
    """What every class `trl_environment` makes shares: the episode's environment, reset, step, reward."""

    _env_id: str = ""
    _env_kwargs: dict[str, Any] = {}

    def __init__(self) -> None:
        self._env, self._max_steps = _made(self._env_id, self._env_kwargs)
        self._reward: float | None = None
        self._steps = 0
        weakref.finalize(self, self._env.close)  # TRL never closes an environment: release its sandbox at the end

    def reset(self, **row: Any) -> str:
        """Start an episode on the row's task (its columns but `prompt`); the environment's first messages as text."""
        task = {k: v for k, v in row.items() if k != "prompt"}
        messages, _info = self._env.reset(options={"task": task} if task else None)
        self._reward, self._steps = None, 0
        return "\n\n".join(str(m.get("content") or "") for m in messages)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call, as one step of the environment; the tool message's text. Past a `TimeLimit`'s steps the
        episode is over (truncated): a call is refused as the environment refuses one after its episode ended."""
        if self._max_steps is not None and self._steps >= self._max_steps:
            raise EpisodeStateError(f"the episode was truncated after max_episode_steps={self._max_steps} steps")
        self._steps += 1
        call = {"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps(arguments)}  # pyright: ignore[reportArgumentType]  # the OpenAI tool-call shape
        replies, reward, terminated, truncated, _info = self._env.step(
            {"role": "assistant", "content": "", "tool_calls": [call]}
        )
        if terminated or truncated:
            self._reward = float(reward)
        return "\n".join(str(m.get("content") or "") for m in replies)

    def get_reward(self) -> float:
        """The reward the episode ended with, else the environment's score of where it stands."""
        if self._reward is not None:
            return self._reward
        reward, _components = self._env._run(self._env.compute_reward())
        return float(reward)


def trl_environment(env: str, **env_kwargs: Any) -> type[TRLEnvironmentBase]:
    """An `environment_factory` for TRL's trainers running the registered environment `env` (e.g.
    `"rollgym/SWE-v0"`, `"rollgym/Calculator-v0"`); `env_kwargs` go to its constructor."""
    probe, _max_steps = _made(env, env_kwargs)
    try:
        schemas = probe.toolset.schemas()
    finally:
        probe.close()
    methods = {}
    for schema in schemas:
        method = _method(schema)
        methods[method.__name__] = method
    label = env.split("/")[-1].replace("-", "_")
    attrs = {"_env_id": env, "_env_kwargs": dict(env_kwargs), "__module__": __name__, **methods}
    return type(f"TRL_{label}", (TRLEnvironmentBase,), attrs)
