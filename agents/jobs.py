"""`AgentJobs` that take an agent by name: the built-in agents (and registered ones, and any `AgentSpec`) run in their
task's sandbox, resolved in the process that runs the jobs (on a Ray actor, the actor's own); a callable runs as it
is. The jobs of `rollgym.generate`, so agent runs get what model rollouts get (resume, summary, viewer, Ctrl-C, Ray)."""

from __future__ import annotations

from typing import Any

from rollgym.agents.catalog import as_agent
from rollgym.proxy.agent import AgentJobs as ProxyAgentJobs
from rollgym.proxy.agent import Reward
from rollgym.proxy.store import ProxySettings


class AgentJobs(ProxyAgentJobs):
    """A `JobRunner`: `agent` (a name, an `AgentSpec` or a callable) on each job's task row, graded by `reward`."""

    def __init__(
        self,
        agent: Any,
        *,
        reward: Reward | None = None,
        settings: ProxySettings | None = None,
        sandbox: dict | None = None,
        options: dict | None = None,
        timeout_s: float | None = None,
        env: str = "rollgym/SWE-v0",
        grade: bool = False,
    ) -> None:
        super().__init__(agent, reward=reward, settings=settings, timeout_s=timeout_s)
        self.sandbox, self.options, self.env, self.grade = sandbox, dict(options or {}), env, grade

    def resolve(self) -> Any:
        return as_agent(self.agent, sandbox=self.sandbox, env=self.env, grade=self.grade, **self.options)
