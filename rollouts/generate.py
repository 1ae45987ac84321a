"""Offline batch generation: rollouts streamed to `rollouts.jsonl`, resumable, with live progress and a summary."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import ClusterLostError, WorkerError

from .batch import EnvFactory, run_rollouts
from .engines.base import SamplingParams
from .engines.default_model import DEFAULT_MODEL
from .limits import Limits
from .output import INFRA_CATEGORIES, RETRIED_FILE, OutputExistsError, RolloutWriter, read_rollouts, summarize, write_summary
from .policy import Policy, as_policy
from .records import Rollout
from .signals import Terminated, exit_code, sigterm_cancels_this_task
from .tasks import load_tasks


class _LiveStats:
    """Running figures for the progress bar: mean reward, sampled tokens per second, errors."""

    def __init__(self) -> None:
        self.t0, self.n, self.reward, self.tokens, self.errors = time.perf_counter(), 0, 0.0, 0, 0

    def add(self, r: Rollout) -> str:
        self.n += 1
        self.reward += r.reward
        self.tokens += sum(len(t.completion_ids) for t in r.turns)
        self.errors += r.error is not None
        rate = self.tokens / max(time.perf_counter() - self.t0, 1e-9)
        return f"reward {self.reward / self.n:.3f} | {rate:,.0f} tok/s | errors {self.errors}"


async def generate_to_dir(*, env: str | EnvFactory, tasks: list[dict[str, Any]], policy: Policy | str, out: str | Path,
                          n: int = 4, concurrency: int = 16, limits: Limits | None = None,
                          sampling: SamplingParams | None = None, resume: bool = False, console: Console | None = None,
                          env_kwargs: dict | None = None, workers: int = 1, retry_errors: bool = True,
                          ray: Any = None) -> dict:
    """Run n rollouts per task into `out/rollouts.jsonl` (skipping those already there on resume, except
    infrastructure failures when `retry_errors`: those run again); return the summary."""
    console = console or Console(stderr=True)
    writer = RolloutWriter(out, resume=resume, retry_errors=retry_errors)
    total = len(tasks) * n
    already = len({(task_id_of(t, i), s) for i, t in enumerate(tasks) for s in range(n)} & writer.done)
    if already or writer.retried:
        console.print(f"resuming: {already} of {total} rollouts already in {writer.path}"
                      + (f"; {writer.retried} infrastructure failures run again (the old rows are in {RETRIED_FILE})"
                         if writer.retried else ""))
    stats = _LiveStats()
    t0 = time.perf_counter()
    progress = Progress(TextColumn("[bold]rollouts"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[stats]}"),
                        TimeElapsedColumn(), console=console, transient=False)

    def on_result(rollout: Rollout) -> None:
        writer.write(rollout)
        progress.update(bar, advance=1, stats=stats.add(rollout))

    try:
        with progress:
            bar = progress.add_task("rollouts", total=total, completed=already, stats="")
            await run_rollouts(env, tasks, policy, n=n, concurrency=concurrency, limits=limits,
                               sampling=sampling, skip=writer.done, on_result=on_result, env_kwargs=env_kwargs,
                               workers=workers, ray=ray, keep=False)  # the file holds them: constant memory
    except ClusterLostError as exc:
        raise ClusterLostError(f"{exc}; {writer.path} holds {len(writer.done)} finished rollouts") from None
    finally:
        writer.close()
    wanted = {(task_id_of(t, i), s) for i, t in enumerate(tasks) for s in range(n)}
    summary = summarize([r for r in read_rollouts(writer.path) if r.key in wanted], wall_s=time.perf_counter() - t0)
    write_summary(out, summary)
    return summary


def generate(env: str, policy: Policy | str = DEFAULT_MODEL, *, out: str | Path, tasks: str | list[dict] | None = None,
             num_tasks: int | None = None, n: int = 4, concurrency: int = 16, limits: Limits | None = None,
             sampling: SamplingParams | None = None, resume: bool = False, workers: int = 1,
             console: Console | None = None, env_kwargs: dict | None = None, retry_errors: bool = True,
             ray: Any = None) -> dict:
    """Batch-generate rollouts to `out/rollouts.jsonl` (resumable: `resume=True` skips what is there) and
    write `out/summary.json`; return the summary. What `rollgym generate` runs.

    On resume, rollouts that failed on infrastructure (engine, sandbox, internal errors) run again unless
    `retry_errors=False`; the agent's own failures never do. `workers` and `ray` as in `run_rollouts` (Ray
    actors). `tasks`: rows, a JSONL file, a `datasets` directory, `"bundled"` (the SWE tasks), or None (the
    environment's own `default_tasks`); `env_kwargs` go to the environment's constructor. Call it from
    synchronous code: it runs its own event loop, so an engine the policy builds for it is closed when it
    returns (the policy builds another on its next use).
    """
    rows = load_tasks(env, tasks, num_tasks=num_tasks) if tasks is None or isinstance(tasks, str) else list(tasks)[:num_tasks]

    async def run() -> dict:
        pol, _ = as_policy(policy)
        with sigterm_cancels_this_task():  # SIGTERM unwinds as Ctrl-C does: sandboxes released, output flushed
            async with pol:
                return await generate_to_dir(env=env, tasks=rows, policy=pol, out=out, n=n, concurrency=concurrency,
                                             limits=limits, sampling=sampling, resume=resume, console=console,
                                             workers=workers, env_kwargs=env_kwargs, retry_errors=retry_errors,
                                             ray=ray)

    return asyncio.run(run())


def print_summary(summary: dict, console: Console) -> None:
    from rich.table import Table

    table = Table(title="summary")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if key == "per_task":
            continue
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    console.print(table)


def run_generate(*, env: str, tasks: str | None, model: str, n: int, concurrency: int, out: str, resume: bool,
                 num_tasks: int | None, limits: Limits, sampling: SamplingParams, tokenizer: Any = None,
                 chat_template: str | None = None, workers: int = 1, engine_kwargs: dict | None = None,
                 env_kwargs: dict | None = None, retry_errors: bool = True, ray: Any = None) -> int:
    """The `rollgym generate` job: the policy and tasks from specs, then `generate`; prints the summary; exit code
    (0; 1 when every rollout failed on infrastructure; 2 for a setup error; 130/143 when interrupted)."""
    console = Console(stderr=True)
    try:
        rows = load_tasks(env, tasks, num_tasks=num_tasks)  # a wrong --tasks or --env fails here, before any model loads
        policy = Policy(model, tokenizer=tokenizer, chat_template=chat_template, log=console.print, engine_kwargs=engine_kwargs)
        if workers == 1 and ray is None:
            policy.engine  # noqa: B018 - a model that cannot load fails here (Ray actors build their own)
    except Exception as exc:  # a setup error (bad spec, missing model or tasks): said in one line, exit 2
        console.print(f"[red]error:[/red] {exc}")
        return 2
    try:
        summary = generate(env, policy, out=out, tasks=rows, n=n, concurrency=concurrency, limits=limits,
                           sampling=sampling, resume=resume, workers=workers, console=console, env_kwargs=env_kwargs,
                           retry_errors=retry_errors, ray=ray)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`Terminated`)
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        console.print(f"[yellow]{what}[/yellow]: finished rollouts are in {out}/rollouts.jsonl; "
                      "run the same command with --resume to continue")
        return exit_code(exc)
    except ClusterLostError as exc:  # the finished rollouts are written; the rest were not run
        console.print(f"[red]error:[/red] {exc}")
        return 1
    except (OutputExistsError, WorkerError) as exc:  # a run that could not start (no cluster, an actor's engine)
        console.print(f"[red]error:[/red] {exc}")
        return 2
    print_summary(summary, console)
    console.print(f"wrote {out}/rollouts.jsonl and {out}/summary.json")
    return infra_verdict(summary, out, console)


def infra_verdict(summary: dict, out: str, console: Console) -> int:
    """Say how many rollouts failed on infrastructure (a resume runs them again); 1 if all of them did."""
    failed, total = summary.get("infra_failures", 0), summary.get("rollouts", 0)
    if not failed:
        return 0
    kinds = ", ".join(f"{k}: {v}" for k, v in summary["errors"].items() if k in INFRA_CATEGORIES)
    if failed == total:
        console.print(f"[red]error:[/red] every rollout ({total}) failed on infrastructure ({kinds}); nothing to train on. "
                      f"Fix the cause (the errors are in {out}/rollouts.jsonl), then run the same command with --resume")
        return 1
    console.print(f"[yellow]{failed} of {total} rollouts failed on infrastructure ({kinds})[/yellow]: "
                  "run the same command with --resume to run them again")
    return 0
