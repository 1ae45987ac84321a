"""Black-box agents as rollouts: each row gets its own proxy session; `agent_rollout_func` is a TRL `rollout_func`.

`agent(row, base_url, api_key)` may be a function (run in a thread, so it may block), an async function,
or a `SubprocessAgent` (any program that reads OPENAI_BASE_URL / OPENAI_API_KEY). A crashing or timed-out
agent yields an errored rollout (category "agent"), never a crashed batch. When a session has several
segments (the agent rewrote its history), the row's rollout is the segment with the most calls (the latest on
ties); every segment stays available in `rollout_func.last_sessions`. TRL's contract: `rollgym.rollouts.trl`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from typing import Any, Callable, Sequence

from pydantic import BaseModel

from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import ProxyError, UsageError
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import ErrorRecord, Rollout

from .session import ProxySession

Agent = Callable[[dict, str, "str | None"], Any]
#: reward(row, agent_output, rollout) -> float, or (float, {component: float}); may be async.
Reward = Callable[[dict, Any, Rollout], Any]


class AgentFailed(ProxyError):
    """The agent process exited with an error."""


class SubprocessResult(BaseModel):
    returncode: int
    stdout: str
    stderr: str


class SubprocessAgent:
    """Run a command per row with the session's endpoint in its environment and the row as JSON on stdin.

    Sets OPENAI_BASE_URL and OPENAI_API_BASE (read by the openai client and LiteLLM) and OPENAI_API_KEY.
    `argv` may be a function of (row, base_url, api_key) for per-row arguments. A non-zero exit raises
    `AgentFailed` when `check` is set; on timeout the process is killed.
    """

    def __init__(self, argv: Sequence[str] | Callable[[dict, str, str | None], Sequence[str]], *, cwd: str | None = None,
                 env: dict[str, str] | None = None, timeout_s: float | None = None, check: bool = True) -> None:
        self.argv, self.cwd, self.env, self.timeout_s, self.check = argv, cwd, env, timeout_s, check

    async def __call__(self, row: dict, base_url: str, api_key: str | None) -> SubprocessResult:
        argv = list(self.argv(row, base_url, api_key) if callable(self.argv) else self.argv)
        env = {**os.environ, **(self.env or {}), "OPENAI_BASE_URL": base_url, "OPENAI_API_BASE": base_url,
               "OPENAI_API_KEY": api_key or "rollgym"}
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, cwd=self.cwd, env=env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(json.dumps(row, default=str).encode()), self.timeout_s)
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        result = SubprocessResult(returncode=proc.returncode or 0, stdout=out.decode(errors="replace"),
                                  stderr=err.decode(errors="replace"))
        if self.check and result.returncode != 0:
            raise AgentFailed(f"{argv[0]} exited with {result.returncode}: {result.stderr[-1500:]}")
        return result


async def _call(fn: Callable, *args: Any) -> Any:
    """Await an async callable; run a plain one in a thread (it may block on HTTP or Docker)."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):
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


async def run_agents(proxy: Any, agent: Agent, rows: Sequence[dict], *, reward: Reward | None = None,
                     concurrency: int = 8, timeout_s: float | None = None, group_ids: Sequence[str] | None = None,
                     sessions_out: list | None = None) -> list[Rollout]:
    """Run `agent` once per row against its own session of `proxy`; one `Rollout` per row, in order."""
    if concurrency < 1:
        raise UsageError("concurrency must be >= 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int, row: dict) -> Rollout:
        async with gate:
            task_id = task_id_of(row, i)
            sess = proxy.session(task_id=task_id, group_id=group_ids[i] if group_ids else task_id, row_index=i)
            if sessions_out is not None:
                sessions_out.append(sess)
            output, error = None, None
            try:
                output = await asyncio.wait_for(_call(agent, row, sess.base_url, proxy.api_key), timeout_s)
            except asyncio.TimeoutError:  # a thread-run agent keeps running; its later calls stay in the session
                error = ErrorRecord(category="timeout", type="TimeoutError", message=f"the agent exceeded {timeout_s}s")
            except Exception as exc:  # a crashing agent is data, not a crashed batch
                error = ErrorRecord(category="agent", type=type(exc).__name__, message=str(exc)[:2000])
            rollout = pick_rollout(sess) or sess.error_rollout("agent", "the agent made no model calls")
            rollout.task_id, rollout.group_id = task_id, group_ids[i] if group_ids else task_id
            if error is not None:
                rollout.error, rollout.stop_reason = error, "error"
            elif rollout.error is None and reward is not None:
                try:
                    value = await _call(reward, row, output, rollout)
                    score, components = value if isinstance(value, tuple) else (value, {})
                    rollout.reward = float(score)
                    rollout.reward_components = {k: float(v) for k, v in components.items()}
                except Exception as exc:
                    rollout.error = ErrorRecord(category="environment", type=type(exc).__name__, message=str(exc)[:2000])
                    rollout.stop_reason = "error"
            if output is not None:
                rollout.meta["agent_output"] = str(output)[-2000:]
            return rollout

    return list(await asyncio.gather(*(one(i, row) for i, row in enumerate(rows))))


def agent_rollout_func(agent: Agent, reward: Reward | None = None, *, policy: Policy | str | None = None,
                       concurrency: int = 8, timeout_s: float | None = None,
                       task_from_prompt: Callable[[Any], dict] | None = None, chat_template: str | None = None,
                       settings: Any = None) -> Callable[[list, Any], dict]:
    """A TRL `rollout_func(prompts, trainer)` that runs `agent` per prompt through a recording proxy.

    Without `policy`, the trainer's own generator (current weights) and `processing_class` serve the proxy
    (`Policy.from_trainer`). `reward(row, output, rollout)` scores each outcome (e.g. an SWE grader on the
    agent's diff); errored rows get reward None.
    """
    from rollgym.rollouts.trl import group_positions, policy_for_trainer, to_trl_columns
    from rollgym.rollouts.trl import task_from_prompt as default_task

    from .server import RecordingProxy

    to_task = task_from_prompt or default_task
    state: dict[str, Any] = {"policy": policy_for_trainer(policy, chat_template)}

    def rollout_func(prompts: list, trainer: Any) -> dict:
        if state["policy"] is None:
            state["policy"] = Policy.from_trainer(trainer, chat_template=chat_template)
        pol: Policy = state["policy"]
        rows = [to_task(p) for p in prompts]
        positions, groups = group_positions(rows)
        sessions: list[ProxySession] = []

        async def run() -> list[Rollout]:
            try:
                async with RecordingProxy(pol, settings=settings) as proxy:
                    return await run_agents(proxy, agent, rows, reward=reward, concurrency=concurrency,
                                            timeout_s=timeout_s, group_ids=groups, sessions_out=sessions)
            finally:  # each step runs on its own event loop: its engine (current weights) closes with it
                await pol.aclose()

        rollouts = asyncio.run(run())
        for r, i in zip(rollouts, positions):
            r.sample_index = i
        rollout_func.last_rollouts, rollout_func.last_sessions = rollouts, sessions
        return to_trl_columns(rollouts, pol.pad_token_id)

    rollout_func.last_rollouts, rollout_func.last_sessions = [], []
    return rollout_func
