"""`AgentJobs`: agent runs as the jobs of `rollgym.generate`, so they get what model rollouts get (resume, summary,
viewer, Ctrl-C, Ray actors): each job is one agent run in its task's sandbox, against a recording proxy this process
starts on first use (one per process, serving the call's policy: on a Ray actor, the actor's own engine)."""

from __future__ import annotations

import asyncio
from typing import Any

from rollgym.agents.catalog import as_agent
from rollgym.proxy.agent import Reward, agent_rollouts
from rollgym.proxy.server import RecordingProxy
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.jobs import RolloutJob, RunSpec
from rollgym.rollouts.records import Rollout


class AgentJobs:
    """A `JobRunner`: `agent` (a name or an `AgentSpec`) on each job's task row, graded by `reward`."""

    def __init__(
        self,
        agent: Any,
        *,
        reward: Reward | None = None,
        settings: ProxySettings | None = None,
        sandbox: dict | None = None,
        options: dict | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.agent, self.reward, self.settings = agent, reward, settings
        self.sandbox, self.options, self.timeout_s = sandbox, dict(options or {}), timeout_s
        self._proxy: RecordingProxy | None = None
        self._runner: Any = None
        self._lock: asyncio.Lock | None = None

    def __getstate__(self) -> dict[str, Any]:  # what travels to a Ray actor: the settings, not this process's proxy
        return {**self.__dict__, "_proxy": None, "_runner": None, "_lock": None}

    async def _started(self, spec: RunSpec) -> RecordingProxy:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._proxy is None:
                self._runner = as_agent(self.agent, sandbox=self.sandbox, **self.options)
                self._proxy = await RecordingProxy(spec.policy, settings=self.settings).start()
        return self._proxy

    async def __call__(self, job: RolloutJob, spec: RunSpec) -> Rollout:
        proxy = await self._started(spec)
        group = f"{spec.group_prefix}{job.task_id}"
        (rollout,) = await agent_rollouts(
            proxy,
            self._runner,
            [job.task],
            reward=self.reward,
            concurrency=1,
            timeout_s=self.timeout_s,
            task_ids=[job.task_id],
            group_ids=[group],
            sample_indexes=[job.sample_index],
        )
        rollout.env_id = spec.env if isinstance(spec.env, str) else rollout.env_id
        return rollout

    async def close(self) -> None:
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.stop()  # (the policy is the call's: its owner closes it)
