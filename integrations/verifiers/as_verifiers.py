"""A rollgym environment as a verifiers v1 environment (`to_verifiers`), which verifiers' own rollout and `eval` run
against any OpenAI-compatible endpoint: its tasks become a verifiers `Taskset` (the environment's opening messages
as each task's prompt), its tools a verifiers `Toolset` that verifiers serves per rollout, and its reward a
`@vf.reward` that replays the conversation through the environment. Tools therefore run twice, in the rollout and in
the replay: for environments whose tools are pure functions of their arguments and the task."""

from __future__ import annotations

import sys
from typing import Any, cast

import verifiers.v1 as vf
from pydantic import Field

from rollgym.integrations.verifiers.rollgym_episode import opening, replayed_reward, rollgym_env, run_sync
from rollgym.integrations.verifiers.rollgym_toolset import RollgymToolset, RollgymToolsetConfig

#: the taskset's id: verifiers imports a taskset by a module name without dots (`_import_plugin` looks it up under
#: `verifiers.v1.tasksets.` first), so this module is also importable under it, in this process
MODULE = "rollgym_as_verifiers"
sys.modules.setdefault(MODULE, sys.modules[__name__])


class RollgymTaskConfig(vf.TaskConfig):
    env: str = "rollgym/Calculator-v0"
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class RollgymTaskData(vf.TaskData):
    row: dict[str, Any]  # the rollgym task row


class RollgymTask(vf.Task[RollgymTaskData, vf.State]):
    """One task row of the environment; its config is a `RollgymTaskConfig` (the taskset's `task`)."""

    @property
    def key(self) -> str:
        return str(self.data.row.get("task_id") or self.hash)

    @classmethod
    def toolsets(cls, config: vf.TaskConfig) -> list[vf.Toolset]:
        config = RollgymTaskConfig.model_validate(config.model_dump())
        env = rollgym_env(config.env, config.env_kwargs)
        if not env.toolset.tools:
            return []
        return [RollgymToolset(RollgymToolsetConfig(env=config.env, env_kwargs=config.env_kwargs))]

    @vf.reward
    async def reward(self, task: RollgymTaskData, trace: vf.Trace) -> float:
        """The rollgym environment's own reward; its components are recorded as metrics `rollgym/<name>`."""
        from verifiers.v1.dialects.chat import message_to_wire

        replies = [message_to_wire(m) for m in trace.assistant_messages]
        config = cast(RollgymTaskConfig, self.config)
        value, components = await replayed_reward(config.env, config.env_kwargs, task.row, replies)
        trace.record_metrics({f"rollgym/{k}": float(v) for k, v in components.items()})
        return float(value)


class RollgymTasksetConfig(vf.TasksetConfig):
    id: str = MODULE
    env: str = "rollgym/Calculator-v0"
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    num_tasks: int = 8
    seed: int = 0
    tasks: list[dict[str, Any]] | None = None  # rows of your own instead of the environment's default ones
    task: RollgymTaskConfig = RollgymTaskConfig()


class RollgymTaskset(vf.Taskset[RollgymTask, RollgymTasksetConfig]):
    """The environment's task rows: the config's `tasks`, else its `default_tasks(num_tasks, seed)`."""

    def load(self):
        config = self.config
        if config.tasks is not None:
            rows = config.tasks
        else:
            env = rollgym_env(config.env, config.env_kwargs)
            rows, _ = env.default_tasks(config.num_tasks, config.seed), env.close()
        task_config = config.task.model_copy(update={"env": config.env, "env_kwargs": config.env_kwargs})
        for row in rows:
            messages, _ = run_sync(opening(config.env, config.env_kwargs, row))
            system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system") or None
            prompt = [m for m in messages if m.get("role") != "system"]
            text = prompt[0]["content"] if len(prompt) == 1 and prompt[0]["role"] == "user" else None
            data = {"row": dict(row), "system_prompt": system, "prompt": text if text is not None else _typed(prompt)}
            yield RollgymTask(RollgymTaskData.model_validate(data), task_config)


def _typed(messages: list[dict]) -> list:
    from verifiers.v1.dialects.chat import parse_message

    return [parse_message(m) for m in messages]


__all__ = ["RollgymTaskset"]


def to_verifiers(
    env_id: str, *, num_tasks: int = 8, seed: int = 0, tasks: list[dict] | None = None, **env_kwargs: Any
) -> vf.SingleAgentEnv:
    """The rollgym environment `env_id` as a verifiers `SingleAgentEnv` over its tasks, played by verifiers' tool-less
    chat harness (`null`, which speaks MCP to the environment's tools) in a local subprocess runtime; pass it to
    verifiers' own `run_episode`/`eval` with a `ModelContext` naming your endpoint (rollgym's `RecordingProxy`)."""
    taskset = {
        "id": MODULE,
        "env": env_id,
        "env_kwargs": env_kwargs,
        "num_tasks": num_tasks,
        "seed": seed,
        "tasks": tasks,
    }
    config = vf.SingleAgentEnvConfig.model_validate(
        {"taskset": taskset, "agent": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}}}
    )
    return vf.SingleAgentEnv(config)
