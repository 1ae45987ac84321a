"""One rollgym environment episode driven from outside rollgym's loop: reset on a task row, then each assistant
message in turn; what the verifiers taskset and its tool server (`as_verifiers`) share. Imports no verifiers."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from rollgym.envs import Env, make
from rollgym.envs.core.wrappers import inner_env
from rollgym.errors import UsageError


def rollgym_env(env_id: str, env_kwargs: dict[str, Any]) -> Env:
    """A fresh environment of `env_id`, unwrapped; a plain gymnasium environment is refused (it has no tasks or
    tools to give verifiers)."""
    env = inner_env(make(env_id, **env_kwargs))
    if not isinstance(env, Env):
        raise UsageError(f"{env_id} is not a rollgym environment: to_verifiers needs one (rollgym.Env)")
    return env


def run_sync(coro: Any) -> Any:
    """`coro`'s result from sync code, also while an event loop runs in this thread (verifiers iterates tasksets
    from async code): then in a worker thread with its own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
            box["error"] = exc

    worker = threading.Thread(target=work, name="rollgym-verifiers-env")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def opening(env_id: str, env_kwargs: dict[str, Any], row: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """The episode's initial messages and tool schemas for `row`."""
    env = rollgym_env(env_id, env_kwargs)
    try:
        messages, info = await env.areset(options={"task": row})
        return messages, list(info.get("tools") or [])
    finally:
        await env.aclose()


async def replayed_reward(
    env_id: str, env_kwargs: dict[str, Any], row: dict[str, Any], replies: list[dict]
) -> tuple[float, dict[str, float]]:
    """The environment's reward for a conversation: reset on `row`, step each assistant reply (its tool calls run
    again here), and the reward at the end (asked of `compute_reward` when the replies stop before the episode
    ends). An episode the environment could not score raises its error."""
    env = rollgym_env(env_id, env_kwargs)
    try:
        await env.areset(options={"task": row})
        for reply in replies:
            _, reward, terminated, truncated, info = await env.astep(reply)
            if "error" in info:
                raise info["error"]
            if terminated or truncated:
                return reward, dict(info.get("reward_components") or {})
        reward, components = await env.compute_reward()
        return float(reward), dict(components)
    finally:
        await env.aclose()
