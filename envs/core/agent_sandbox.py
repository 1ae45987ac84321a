"""What an environment with a sandbox offers an agent CLI that runs inside it (`rg.run_agents`,
`rg.trl.agent_rollout_func`): where the row's sandbox goes before it starts, and after `areset` the running sandbox,
where and as whom to work, the instructions, what the agent left, and the environment's own reward of it."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from rollgym.errors import UsageError


class AgentWorkspace(BaseModel):
    """The episode as an agent in the sandbox sees it: its working directory, the task's instructions, the
    environment's own task object (an agent may read it: Aider adds the files a SWE task's patch names), and a file
    listing paths that are not part of the agent's answer (its own files), if the environment keeps one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workdir: str
    instructions: str
    task: Any = None
    exclude_file: str | None = None


class SandboxedEnv(Protocol):
    """An environment an agent can run inside. `sandbox` is its running sandbox after `areset` (an object with
    `aexec`); the environment takes SandboxConfig overrides as `sandbox=` when it is made."""

    sandbox: Any

    @classmethod
    def sandbox_placement(cls, row: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        """The sandbox settings the row's sandbox will start with (`user`, `docker_host`, ...), before it starts."""
        ...

    def agent_workspace(self) -> AgentWorkspace:
        """After `areset`: where and on what the agent works."""
        ...

    async def agent_outcome(self) -> dict[str, Any]:
        """What the agent left, for its record (SWE: `diff`, or `refused` with why); read after the agent ran and
        after `compute_reward` if that ran."""
        ...

    async def compute_reward(self) -> tuple[float, dict[str, float]]:
        """The environment's reward of the sandbox's state (the same the rollout loop takes at an episode's end)."""
        ...


_MEMBERS = ("sandbox_placement", "agent_workspace", "agent_outcome", "compute_reward")


def is_sandboxed(env_or_class: Any) -> bool:
    """Whether an environment (or its class) offers what an agent needs to run inside its sandbox."""
    return all(callable(getattr(env_or_class, name, None)) for name in _MEMBERS)


def sandboxed_env_class(env_id: str) -> type:
    """The class of the registered environment `env_id`, which must have a sandbox for agents (`UsageError`
    otherwise, naming what it lacks)."""
    from rollgym.envs.core.registration import make
    from rollgym.envs.core.wrappers import inner_env

    made = make(env_id)
    try:
        cls = type(inner_env(made))
    finally:
        made.close()
    missing = [name for name in _MEMBERS if not callable(getattr(cls, name, None))]
    if missing:
        raise UsageError(
            f"agents run inside an environment's sandbox, and {env_id} ({cls.__name__}) offers none: it lacks "
            f"{', '.join(missing)} (rollgym.envs.SandboxedEnv); a callable agent runs on any environment's rows"
        )
    return cls
