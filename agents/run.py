"""`run_agents` and `agent_rollout_func` that take an agent by name: the built-in agents (and registered ones) run in
their task's sandbox and are graded by the environment's grader; a callable runs as it is (your own code)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollgym.agents.catalog import as_agent
from rollgym.agents.jobs import AgentJobs
from rollgym.agents.sandboxed import SandboxedAgent
from rollgym.engines.default_model import DEFAULT_MODEL
from rollgym.errors import UsageError
from rollgym.proxy.agent import Agent, Reward
from rollgym.proxy.agent import run_agents as run_agent_callables
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.generate import generate
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.summary import RunSummary

SANDBOXED_ENVS = ("rollgym/SWE-v0",)


def resolve(
    agent: Any, env: str, reward: Reward | None, grade: bool, sandbox: dict | None, options: dict | None
) -> tuple[Agent, Reward | None]:
    """The agent to run per row, and its reward: an agent by name or spec runs in the sandbox of `env`'s task and,
    unless `grade=False` or another `reward` is given, is graded by that environment's grader."""
    resolved = as_agent(agent, sandbox=sandbox, **(options or {}))
    if isinstance(resolved, SandboxedAgent):
        if env not in SANDBOXED_ENVS:
            raise UsageError(f"agents run in the sandboxes of {', '.join(SANDBOXED_ENVS)}, not of {env!r}")
        if reward is None and grade:
            from rollgym.envs.swe import swe_reward

            reward = swe_reward
    return resolved, reward


def run_agents(
    agent: Any,
    tasks: str | Iterable[dict] | None = None,
    policy: Policy | str = DEFAULT_MODEL,
    *,
    out: str | Path,
    env: str = "rollgym/SWE-v0",
    reward: Reward | None = None,
    grade: bool = True,
    sandbox: dict | None = None,
    agent_options: dict | None = None,
    n: int = 1,
    concurrency: int = 8,
    timeout_s: float | None = None,
    settings: ProxySettings | None = None,
    num_tasks: int | None = None,
    resume: bool = False,
    retry_errors: bool = True,
    console: Any = None,
    ray: Any = None,
    workers: int = 1,
) -> RunSummary:
    """`agent` over a batch of `env`'s tasks, `n` runs per task, to `out/rollouts.jsonl` with `out/summary.json`
    (resume, Ctrl-C, the viewer, as `rollgym.generate`). `agent`: a built-in agent's name (`claude-code`, `codex`,
    `opencode`, `mini-swe-agent`, `aider`) or an `AgentSpec`, run in each task's sandbox with `agent_options` (model,
    max_output_tokens, timeout_s, ...) and `sandbox` (SandboxConfig overrides), each run on its own session of a
    recording proxy (`settings`), graded by `env`'s grader unless `reward` or `grade=False` says otherwise; on Ray
    actors with `ray`/`workers` as `generate` takes them (each actor serves its own proxy). Or a callable
    `agent(row, base_url, api_key)`, run as it is (`rollgym.proxy.run_agents`; not on Ray)."""
    resolved, reward = resolve(agent, env, reward, grade, sandbox, agent_options)
    if not isinstance(resolved, SandboxedAgent):
        if ray is not None or workers != 1:
            raise UsageError(
                "a callable agent runs in this process: pass a built-in agent's name or an AgentSpec for Ray"
            )
        return run_agent_callables(
            resolved,
            tasks,
            policy,
            out=out,
            env=env,
            reward=reward,
            n=n,
            concurrency=concurrency,
            timeout_s=timeout_s,
            settings=settings,
            num_tasks=num_tasks,
            resume=resume,
            retry_errors=retry_errors,
            console=console,
        )
    jobs = AgentJobs(
        resolved.spec, reward=reward, settings=settings, sandbox=sandbox, timeout_s=timeout_s
    )  # the spec as resolved: built once, with its options
    return generate(
        env,
        policy,
        out=out,
        tasks=list(tasks) if tasks is not None and not isinstance(tasks, str) else tasks,
        num_tasks=num_tasks,
        n=n,
        concurrency=concurrency,
        resume=resume,
        console=console,
        retry_errors=retry_errors,
        ray=ray,
        workers=workers,
        job_runner=jobs,
    )
