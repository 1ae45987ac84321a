"""`run_agents` and `agent_rollout_func` that take an agent by name: the built-in agents (and registered ones) run in
their task's sandbox and are graded by the environment's grader; a callable runs as it is (your own code)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollgym.agents.catalog import as_agent
from rollgym.agents.jobs import AgentJobs
from rollgym.agents.sandboxed import SandboxedAgent, environment_reward
from rollgym.engines.default_model import DEFAULT_MODEL
from rollgym.errors import UsageError
from rollgym.proxy.agent import Agent, Reward
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.generate import generate
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.summary import RunSummary
from rollgym.rollouts.tasks import load_tasks


def resolve(
    agent: Any, env: str, reward: Reward | None, grade: bool, sandbox: dict | None, options: dict | None
) -> tuple[Agent, Reward | None]:
    """The agent to run per row, and its reward: an agent by name or spec runs in the sandbox of `env`'s task (any
    environment with one: `rollgym.envs.SandboxedEnv`) and, unless `grade=False` or another `reward` is given, is
    graded by that environment's own reward, in its sandbox's state after the run."""
    graded = reward is None and grade
    resolved = as_agent(agent, sandbox=sandbox, env=env, grade=graded, **(options or {}))
    if isinstance(resolved, SandboxedAgent) and graded:
        reward = environment_reward
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
    (resume, Ctrl-C, the viewer, as `rollgym.generate`, whose jobs they are). `agent`: a built-in agent's name
    (`claude-code`, `codex`, `opencode`, `mini-swe-agent`, `aider`) or an `AgentSpec`, run in each task's sandbox with
    `agent_options` (model, max_output_tokens, timeout_s, ...) and `sandbox` (SandboxConfig overrides), each run on its
    own session of a recording proxy (`settings`), graded by `env`'s grader unless `reward` or `grade=False` says
    otherwise; on Ray actors with `ray`/`workers` as `generate` takes them (each actor serves its own proxy). Or a
    callable `agent(row, base_url, api_key)`, run as it is in this process, on `env`'s task rows (not on Ray);
    `reward(row, output, rollout)` scores each run."""
    resolved, reward = resolve(agent, env, reward, grade, sandbox, agent_options)
    sandboxed = isinstance(resolved, SandboxedAgent)
    if not sandboxed and (ray is not None or workers != 1):
        raise UsageError("a callable agent runs in this process: pass a built-in agent's name or an AgentSpec for Ray")
    jobs = AgentJobs(
        resolved.spec if sandboxed else resolved,  # a spec is resolved again where the jobs run (a Ray actor)
        reward=reward,
        settings=settings,
        sandbox=sandbox if sandboxed else None,
        timeout_s=timeout_s,
        env=env,
        grade=bool(getattr(resolved, "grade", False)),
    )
    rows = tasks if tasks is None or isinstance(tasks, str) else list(tasks)
    if not sandboxed:  # your own code on `env`'s rows: no environment is made or prepared for it
        rows = load_tasks(env, rows, num_tasks=num_tasks)
    return generate(
        env if sandboxed else None,
        policy,
        out=out,
        tasks=rows,
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
