"""Black-box agents as rollouts: each row gets its own proxy session. `AgentJobs` runs an agent as the jobs of the
one batch path (`rg.run_agents` and `rg.generate` to disk, Ray actors); `agent_rollouts` returns the rollouts of a
list of rows on a running proxy (TRL's `rg.trl.agent_rollout_func`).

`agent(row, base_url, api_key)` may be a function (run in a thread, so it may block) or an async function: your
own code, run as it is (agent CLIs and other programs a policy steers run in their task's sandbox:
`rollgym.agents`). A crashing or timed-out
agent yields an errored rollout (category "agent"), never a crashed batch. When a session has several
segments (the agent rewrote its history), the row's rollout is the segment with the most calls (the latest on
ties); every segment stays available to the caller (`sessions_out`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from rollgym.engines.base import SamplingParams
from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import SandboxError, UsageError
from rollgym.proxy.server import RecordingProxy
from rollgym.proxy.session import ProxySession
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.jobs import LocalExecutor, RolloutJob, RunSpec
from rollgym.rollouts.records import ErrorRecord, Rollout

Agent = Callable[[dict, str, "str | None"], Any]
#: reward(row, agent_output, rollout) -> float, or (float, {component: float}); may be async.
Reward = Callable[[dict, Any, Rollout], Any]


async def _call(fn: Callable, *args: Any) -> Any:
    """Await an async callable; run a plain one in a thread (it may block on HTTP or Docker)."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    return await result if inspect.isawaitable(result) else result


def pick_rollout(sess: ProxySession) -> Rollout | None:
    """The session's main segment: the most calls, the latest on ties (None when nothing was sampled)."""
    rollouts = sess.rollouts()
    if not rollouts:
        return None
    best = max(range(len(rollouts)), key=lambda i: (len(rollouts[i].turns), i))
    main = rollouts[best]
    if main.proxy is not None:
        main.proxy.segments = len(rollouts)
        main.proxy.segment_reasons = [r.proxy.segment_reason if r.proxy else None for r in rollouts]
    return main


async def run_agent(
    proxy: Any,
    agent: Agent,
    job: RolloutJob,
    group_id: str,
    *,
    reward: Reward | None = None,
    timeout_s: float | None = None,
    sessions_out: list | None = None,
) -> Rollout:
    """One agent run: `agent` on `job`'s row against a session of its own; the session's main segment as the job's
    rollout, graded by `reward`. A crashing or timed-out agent, or a reward that cannot grade, is an errored rollout."""
    sess = proxy.session(task_id=job.task_id, group_id=group_id, row_index=job.task_index)
    if sessions_out is not None:
        sessions_out.append(sess)
    output, error = None, None
    try:
        output = await asyncio.wait_for(_call(agent, job.task, sess.base_url, proxy.api_key), timeout_s)
    except TimeoutError:  # a thread-run agent keeps running; its later calls stay in the session
        error = ErrorRecord(category="timeout", type="TimeoutError", message=f"the agent exceeded {timeout_s}s")
    except Exception as exc:  # noqa: BLE001 - a crashing agent is data, not a crashed batch
        # the agent's own failure, unless the error names its category (a timeout) or is its sandbox's
        named = getattr(exc, "category", None) or isinstance(exc, SandboxError)
        error = ErrorRecord.of(exc, None if named else "agent")
    rollout = pick_rollout(sess) or sess.error_rollout("agent", "the agent made no model calls")
    rollout.task_id, rollout.group_id, rollout.sample_index = job.task_id, group_id, job.sample_index
    if error is not None:
        rollout.error, rollout.stop_reason = error, "error"
    elif rollout.error is None and reward is not None:
        try:
            value = await _call(reward, job.task, output, rollout)
            score, components = value if isinstance(value, tuple) else (value, {})
            rollout.reward = float(score)
            rollout.reward_components = {k: float(v) for k, v in components.items()}
        except Exception as exc:  # noqa: BLE001 - grading that could not run (a SandboxError) is infrastructure, retried
            rollout.error, rollout.stop_reason = ErrorRecord.of(exc), "error"
    if output is not None:
        rollout.agent_output = str(output)[-2000:]
    return rollout


class AgentJobs:
    """A `JobRunner`: an agent on each job's row, each run on its own session of a recording proxy (the one given, or
    one this process starts on first use serving the call's policy: on a Ray actor, the actor's own engine)."""

    def __init__(
        self,
        agent: Any,
        *,
        reward: Reward | None = None,
        settings: ProxySettings | None = None,
        timeout_s: float | None = None,
        proxy: Any = None,
        sessions_out: list | None = None,
    ) -> None:
        self.agent, self.reward, self.settings, self.timeout_s = agent, reward, settings, timeout_s
        self.sessions_out = sessions_out
        self._given = proxy
        self._proxy: Any = proxy
        self._runner: Any = None
        self._lock: asyncio.Lock | None = None

    def __getstate__(self) -> dict[str, Any]:  # what travels to a Ray actor: the settings, not this process's proxy
        if self._given is not None:
            raise UsageError("agent jobs on a proxy of this process cannot run elsewhere")
        return {**self.__dict__, "_proxy": None, "_runner": None, "_lock": None}

    def resolve(self) -> Agent:
        """The agent to call per row (a subclass resolves names and specs: `rollgym.agents`)."""
        return self.agent

    async def _started(self, spec: RunSpec) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._runner is None:
                self._runner = self.resolve()
            if self._proxy is None:
                self._proxy = await RecordingProxy(spec.policy, settings=self.settings).start()
        return self._proxy

    async def __call__(self, job: RolloutJob, spec: RunSpec) -> Rollout:
        proxy = await self._started(spec)
        rollout = await run_agent(
            proxy,
            self._runner,
            job,
            job.group_id(spec.group_prefix),
            reward=self.reward,
            timeout_s=self.timeout_s,
            sessions_out=self.sessions_out,
        )
        if isinstance(spec.env, str):
            rollout.env_id = spec.env
        return rollout

    async def close(self) -> None:
        proxy, self._proxy = self._proxy, self._given
        if proxy is not None and proxy is not self._given:
            await proxy.stop()  # (the policy is the call's: its owner closes it)


async def agent_rollouts(
    proxy: Any,
    agent: Agent,
    rows: Sequence[dict],
    *,
    reward: Reward | None = None,
    concurrency: int = 8,
    timeout_s: float | None = None,
    task_ids: Sequence[str] | None = None,
    group_ids: Sequence[str] | None = None,
    sample_indexes: Sequence[int] | None = None,
    sessions_out: list | None = None,
    on_result: Callable[[Rollout], None] | None = None,
) -> list[Rollout]:
    """Run `agent` once per row against its own session of `proxy`; one `Rollout` per row, in order (each also
    given to `on_result` as it finishes). A row's id (`task_ids`, else its own) names its group unless `group_ids`
    says otherwise; `sample_indexes` number the runs of one task. The rows are jobs of the one batch path
    (`rollgym.rollouts.jobs`), run by its local executor."""
    if concurrency < 1:
        raise UsageError("concurrency must be >= 1")
    jobs = [
        RolloutJob(
            i,
            task_ids[i] if task_ids else task_id_of(row, i),
            sample_indexes[i] if sample_indexes is not None else 0,
            row,
            group_ids[i] if group_ids else None,
        )
        for i, row in enumerate(rows)
    ]
    runner = AgentJobs(agent, reward=reward, timeout_s=timeout_s, proxy=proxy, sessions_out=sessions_out)
    spec = RunSpec(env=None, policy=proxy.policy, limits=None, sampling=SamplingParams(), job_runner=runner)
    results: dict[int, Rollout] = {}

    def collect(ti: int, _si: int, rollout: Rollout) -> None:
        results[ti] = rollout
        if on_result is not None:
            on_result(rollout)

    await LocalExecutor().run(spec, jobs, concurrency=concurrency, on_result=collect)
    return [results[i] for i in range(len(jobs))]
