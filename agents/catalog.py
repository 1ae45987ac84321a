"""The agents rollgym knows by name, and how a name, a spec or a callable becomes something `run_agents` can run."""

from __future__ import annotations

from typing import Any

from rollgym.agents.builtin.aider import Aider
from rollgym.agents.builtin.claude_code import ClaudeCode
from rollgym.agents.builtin.codex import Codex
from rollgym.agents.builtin.mini_swe_agent import MiniSweAgent
from rollgym.agents.builtin.opencode import OpenCode
from rollgym.agents.sandboxed import SandboxedAgent
from rollgym.agents.spec import AgentSpec
from rollgym.errors import UsageError

AGENTS: dict[str, type[AgentSpec]] = {cls.name: cls for cls in (ClaudeCode, Codex, OpenCode, MiniSweAgent, Aider)}


def register_agent(cls: type[AgentSpec]) -> type[AgentSpec]:
    """Make `cls` known by its `name` (`--agent NAME`, `agent_rollout_func("NAME")`); usable as a decorator."""
    if not (isinstance(cls, type) and issubclass(cls, AgentSpec)):
        raise UsageError(f"register_agent takes an AgentSpec subclass, not {cls!r}")
    AGENTS[cls.name] = cls
    return cls


def agent_spec(name: str, **options: Any) -> AgentSpec:
    """The spec of the agent called `name`, built with `options` (model, max_output_tokens, timeout_s, ...)."""
    if name not in AGENTS:
        raise UsageError(f"no agent called {name!r}: rollgym has {', '.join(sorted(AGENTS))} (register_agent adds one)")
    return AGENTS[name](**options)


def as_agent(
    agent: Any,
    *,
    sandbox: dict[str, Any] | None = None,
    env: str = "rollgym/SWE-v0",
    grade: bool = False,
    **options: Any,
) -> Any:
    """What runs per row: a name or an `AgentSpec` becomes a `SandboxedAgent` (the agent inside the sandbox of the
    task's environment `env`, graded by its reward when `grade`; `options` go to the spec, `sandbox` to the sandbox),
    a callable stays as it is (your own code, run as it is)."""
    if isinstance(agent, str):
        agent = agent_spec(agent, **options)
    elif options:
        raise UsageError(f"agent options ({', '.join(options)}) go with an agent's name, not with {agent!r}")
    if isinstance(agent, AgentSpec):
        agent.executable()  # a clear error now if it is not installed, not one per rollout
        return SandboxedAgent(agent, env=env, sandbox=sandbox, grade=grade)
    if not callable(agent):
        raise UsageError(f"an agent is a name ({', '.join(sorted(AGENTS))}), an AgentSpec or a callable, not {agent!r}")
    return agent
