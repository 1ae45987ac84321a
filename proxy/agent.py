"""Black-box agents as rollouts: each row gets its own proxy session. `agent_rollouts` returns the rollouts of a
list of rows; `run_agents` runs a batch to disk as `rollgym.generate` does (resume, summary, Ctrl-C); for TRL,
`rollgym.integrations.trl.rollout_func.agent_rollout_func`.

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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rollgym.engines.default_model import DEFAULT_MODEL
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.sandbox import SandboxError
from rollgym.errors import UsageError
from rollgym.proxy.server import RecordingProxy
from rollgym.proxy.session import ProxySession
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.generate import write_run
from rollgym.rollouts.loop import env_failure_category
from rollgym.rollouts.policy import Policy, as_policy
from rollgym.rollouts.records import ErrorRecord, Rollout
from rollgym.rollouts.stopping import sigterm_cancels_this_task
from rollgym.rollouts.summary import RunSummary
from rollgym.rollouts.tasks import load_tasks

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
    main.meta["segments"] = len(rollouts)
    main.meta["segment_reasons"] = [r.meta.get("segment_reason") for r in rollouts]
    return main


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
    says otherwise; `sample_indexes` number the runs of one task."""
    if concurrency < 1:
        raise UsageError("concurrency must be >= 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int, row: dict) -> Rollout:
        async with gate:
            task_id = task_ids[i] if task_ids else task_id_of(row, i)
            group = group_ids[i] if group_ids else task_id
            sess = proxy.session(task_id=task_id, group_id=group, row_index=i)
            if sessions_out is not None:
                sessions_out.append(sess)
            output, error = None, None
            try:
                output = await asyncio.wait_for(_call(agent, row, sess.base_url, proxy.api_key), timeout_s)
            except TimeoutError:  # a thread-run agent keeps running; its later calls stay in the session
                error = ErrorRecord(category="timeout", type="TimeoutError", message=f"the agent exceeded {timeout_s}s")
            except Exception as exc:  # noqa: BLE001 - a crashing agent is data, not a crashed batch
                # the agent's own failure, unless the error names its category (a timeout) or is its sandbox's
                named = getattr(exc, "category", None) or isinstance(exc, SandboxError)
                category = env_failure_category(exc) if named else "agent"
                error = ErrorRecord(category=category, type=type(exc).__name__, message=str(exc)[:2000])
            rollout = pick_rollout(sess) or sess.error_rollout("agent", "the agent made no model calls")
            rollout.task_id, rollout.group_id = task_id, group
            if sample_indexes is not None:
                rollout.sample_index = sample_indexes[i]
            if error is not None:
                rollout.error, rollout.stop_reason = error, "error"
            elif rollout.error is None and reward is not None:
                try:
                    value = await _call(reward, row, output, rollout)
                    score, components = value if isinstance(value, tuple) else (value, {})
                    rollout.reward = float(score)
                    rollout.reward_components = {k: float(v) for k, v in components.items()}
                except Exception as exc:  # noqa: BLE001 - grading that could not run (a SandboxError) is infrastructure, retried
                    rollout.error = ErrorRecord(
                        category=env_failure_category(exc), type=type(exc).__name__, message=str(exc)[:2000]
                    )
                    rollout.stop_reason = "error"
            if output is not None:
                rollout.meta["agent_output"] = str(output)[-2000:]
            if on_result is not None:
                on_result(rollout)
            return rollout

    return list(await asyncio.gather(*(one(i, row) for i, row in enumerate(rows))))


def run_agents(
    agent: Agent,
    tasks: str | Iterable[dict] | None = None,
    policy: Policy | str = DEFAULT_MODEL,
    *,
    out: str | Path,
    env: str = "rollgym/SWE-v0",
    num_tasks: int | None = None,
    n: int = 1,
    reward: Reward | None = None,
    concurrency: int = 8,
    timeout_s: float | None = None,
    settings: ProxySettings | None = None,
    resume: bool = False,
    retry_errors: bool = True,
    console: Any = None,
) -> RunSummary:
    """A black-box agent over a batch, to disk, as `rollgym.generate` does for the rollout loop: `n` runs of `agent`
    per task row, each on its own session of one recording proxy serving `policy`; every rollout appended to
    `out/rollouts.jsonl` as it finishes (resume with `resume=True`: pairs already there are skipped, infrastructure
    failures run again), `out/summary.json` written, the summary returned. Ctrl-C or SIGTERM stop it with what
    finished on disk. `tasks` as `rollgym.load_tasks` takes them (`env` names the environment whose tasks they are,
    for None or "bundled"); `reward(row, output, rollout)` scores each run (`rollgym.swe_reward` for an SWE diff).
    """
    rows = load_tasks(env, tasks, num_tasks=num_tasks)

    async def run() -> RunSummary:
        pol, owned = as_policy(policy)

        async def produce(skip: frozenset[tuple[str, int]], on_result: Callable[[Rollout], None]) -> None:
            jobs = [(task_id_of(row, i), s, row) for i, row in enumerate(rows) for s in range(n)]
            jobs = [j for j in jobs if (j[0], j[1]) not in skip]
            if not jobs:
                return
            ids = [tid for tid, _, _ in jobs]
            async with RecordingProxy(pol, settings=settings) as proxy:
                await agent_rollouts(
                    proxy,
                    agent,
                    [row for _, _, row in jobs],
                    reward=reward,
                    concurrency=concurrency,
                    timeout_s=timeout_s,
                    task_ids=ids,
                    group_ids=ids,
                    sample_indexes=[s for _, s, _ in jobs],
                    on_result=on_result,
                )

        with sigterm_cancels_this_task():  # SIGTERM unwinds as Ctrl-C does: sessions closed, output flushed
            try:
                return await write_run(out, rows, n, produce, resume=resume, retry_errors=retry_errors, console=console)
            finally:
                if owned:
                    await pol.aclose()

    return asyncio.run(run())
