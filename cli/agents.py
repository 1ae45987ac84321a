"""`rollgym generate --agent NAME`: an agent CLI in each task's sandbox, through one recording proxy, to disk."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console

from rollgym.cli.generate import report_run
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tasks import load_tasks


def agent_options(items: list[str] | None, max_tokens: int) -> dict[str, Any]:
    """`--agent-option KEY=VALUE` as keyword arguments of the agent (VALUE parsed as JSON when it parses)."""
    options: dict[str, Any] = {"max_output_tokens": max_tokens}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"--agent-option {item!r}: expected KEY=VALUE, e.g. step_limit=4")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return options


def run_agent_batch(
    *,
    agent: str,
    options: dict[str, Any],
    env: str,
    tasks: str | None,
    model: str,
    n: int,
    concurrency: int,
    out: str,
    resume: bool,
    num_tasks: int | None,
    max_tokens: int,
    temperature: float,
    timeout: float | None,
    retry_errors: bool,
    tokenizer: Any = None,
    chat_template: str | None = None,
    engine_kwargs: dict | None = None,
    ray: Any = None,
    workers: int = 1,
) -> int:
    """The `--agent` job; the exit codes of `rollgym generate` (0, 1 all infrastructure, 2 setup, 130/143)."""
    from rollgym.agents.run import resolve, run_agents
    from rollgym.proxy import ProxySettings

    console = Console(stderr=True)
    try:
        resolve(agent, env, None, True, None, options)  # an unknown or missing agent, or another env: said now
        rows = load_tasks(env, tasks, num_tasks=num_tasks)
        policy = Policy(
            model, tokenizer=tokenizer, chat_template=chat_template, log=console.print, engine_kwargs=engine_kwargs
        )
        if ray is None:
            policy.engine  # noqa: B018 - a model that cannot load fails here (Ray actors build their own)
    except Exception as exc:  # noqa: BLE001 - a setup error: said in one line, exit 2
        console.print(f"[red]error:[/red] {exc}")
        return 2
    settings = ProxySettings(default_max_tokens=max_tokens, temperature=temperature)
    return report_run(
        lambda: run_agents(
            agent,
            rows,
            policy,
            out=out,
            env=env,
            n=n,
            concurrency=concurrency,
            timeout_s=timeout,
            settings=settings,
            resume=resume,
            retry_errors=retry_errors,
            console=console,
            agent_options=options,
            ray=ray,
            workers=workers,
        ),
        out,
        console,
    )
