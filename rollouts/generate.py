"""Offline batch generation: rollouts streamed to `rollouts.jsonl`, resumable, with live progress and a summary."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rollgym.engines.base import SamplingParams
from rollgym.engines.default_model import DEFAULT_MODEL
from rollgym.envs.core.run_records import run_records
from rollgym.envs.core.tasks import task_id_of
from rollgym.errors import ClusterLostError, UsageError
from rollgym.limits import Limits, as_limits
from rollgym.rollouts.batch import EnvFactory, run_rollouts
from rollgym.rollouts.output import RETRIED_FILE, RolloutWriter, read_rollouts
from rollgym.rollouts.policy import Policy, as_policy
from rollgym.rollouts.records import Rollout
from rollgym.rollouts.stopping import sigterm_cancels_this_task
from rollgym.rollouts.summary import RunSummary, summarize, write_summary
from rollgym.rollouts.tasks import load_tasks


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


#: Runs the rollouts not in `skip` ((task id, sample index) pairs already on disk), reporting each as it finishes.
Produce = Callable[[frozenset[tuple[str, int]], Callable[[Rollout], None]], Awaitable[None]]


async def write_run(
    out: str | Path,
    tasks: list[dict[str, Any]],
    n: int,
    produce: Produce,
    *,
    resume: bool = False,
    retry_errors: bool = True,
    console: Console | None = None,
) -> RunSummary:
    """A batch to `out/rollouts.jsonl`, whoever makes the rollouts (the loop, or agents through the proxy): resume
    (pairs already there are skipped, except infrastructure failures when `retry_errors`: those run again), live
    progress, every rollout flushed as it finishes, `out/summary.json`, and `out/sandboxes.jsonl`, the sandboxes the
    run started and ended (recorded by the hooks the environments register: envs/core/run_records.py); returns the
    summary."""
    console = console or Console(stderr=True)
    writer = RolloutWriter(out, resume=resume, retry_errors=retry_errors)
    wanted = {(task_id_of(t, i), s) for i, t in enumerate(tasks) for s in range(n)}
    already = len(wanted & writer.done)
    if already or writer.retried:
        console.print(
            f"resuming: {already} of {len(wanted)} rollouts already in {writer.path}"
            + (
                f"; {writer.retried} infrastructure failures run again (the old rows are in {RETRIED_FILE})"
                if writer.retried
                else ""
            )
        )
    stats = _LiveStats()
    t0 = time.perf_counter()
    progress = Progress(
        TextColumn("[bold]rollouts"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )

    def on_result(rollout: Rollout) -> None:
        writer.write(rollout)
        progress.update(bar, advance=1, stats=stats.add(rollout))

    try:
        with progress, run_records(out):  # what it starts (its sandboxes), recorded as they start and end
            bar = progress.add_task("rollouts", total=len(wanted), completed=already, stats="")
            await produce(frozenset(writer.done), on_result)
    except ClusterLostError as exc:
        raise ClusterLostError(f"{exc}; {writer.path} holds {len(writer.done)} finished rollouts") from None
    finally:
        writer.close()
    summary = summarize([r for r in read_rollouts(writer.path) if r.key in wanted], wall_s=time.perf_counter() - t0)
    write_summary(out, summary)
    return summary


async def generate_to_dir(
    *,
    env: str | EnvFactory | None,
    tasks: list[dict[str, Any]],
    policy: Policy | str,
    out: str | Path,
    n: int = 4,
    concurrency: int = 16,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    resume: bool = False,
    console: Console | None = None,
    env_kwargs: dict | None = None,
    workers: int = 1,
    retry_errors: bool = True,
    ray: Any = None,
    job_runner: Any = None,
) -> RunSummary:
    """Run n rollouts per task into `out/rollouts.jsonl` (`write_run`); return the summary."""

    async def produce(skip: frozenset[tuple[str, int]], on_result: Callable[[Rollout], None]) -> None:
        await run_rollouts(
            env,
            tasks,
            policy,
            n=n,
            concurrency=concurrency,
            limits=limits,
            sampling=sampling,
            skip=skip,
            on_result=on_result,
            env_kwargs=env_kwargs,
            workers=workers,
            ray=ray,
            keep=False,
            job_runner=job_runner,
        )  # the file holds them: constant memory

    return await write_run(out, tasks, n, produce, resume=resume, retry_errors=retry_errors, console=console)


def generate(
    env: str | None,
    policy: Policy | str = DEFAULT_MODEL,
    *,
    out: str | Path,
    tasks: str | list[dict] | None = None,
    num_tasks: int | None = None,
    n: int = 4,
    concurrency: int = 16,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    resume: bool = False,
    workers: int = 1,
    console: Console | None = None,
    env_kwargs: dict | None = None,
    retry_errors: bool = True,
    ray: Any = None,
    job_runner: Any = None,
    truncation: str | None = None,
) -> RunSummary:
    """Batch-generate rollouts to `out/rollouts.jsonl` (resumable: `resume=True` skips what is there) and
    write `out/summary.json`; return the summary (a `RunSummary`). What `rollgym generate` runs.

    On resume, rollouts that failed on infrastructure (engine, sandbox, internal errors) run again unless
    `retry_errors=False`; the agent's own failures never do. `workers` and `ray` as in `run_rollouts` (Ray
    actors). `tasks`: rows, a JSONL file, a `datasets` directory, `"bundled"` (the SWE tasks), or None (the
    environment's own `default_tasks`); `env_kwargs` go to the environment's constructor; `job_runner` runs each job
    instead of the rollout loop (`rollgym.run_agents` runs agents this way; `env` None: its jobs need none);
    `truncation` ("end" or "close") what a turn cut by its token budget does, for a policy given as a spec (a
    `Policy` takes it itself: `rg.Policy(spec, truncation="close")`). Call it from
    synchronous code: it runs its own event loop, so an engine the policy builds for it is closed when it
    returns (the policy builds another on its next use).
    """
    limits = as_limits(limits)  # a bad budget fails the call here, not every rollout
    rows = load_tasks(
        env or "", tasks, num_tasks=num_tasks, env_kwargs=env_kwargs
    )  # (no environment: the rows are given)

    if truncation is not None and isinstance(policy, Policy):
        if policy.tokenizer is None or policy.tokenizer.truncation != truncation:
            raise UsageError(f"this Policy was made without truncation={truncation!r}: pass it to rg.Policy(...)")
    spec_options = {"truncation": truncation} if truncation is not None else {}

    async def run() -> RunSummary:
        pol, _ = as_policy(policy, **spec_options)
        with sigterm_cancels_this_task():  # SIGTERM unwinds as Ctrl-C does: sandboxes released, output flushed
            async with pol:
                return await generate_to_dir(
                    env=env,
                    tasks=rows,
                    policy=pol,
                    out=out,
                    n=n,
                    concurrency=concurrency,
                    limits=limits,
                    sampling=sampling,
                    resume=resume,
                    console=console,
                    workers=workers,
                    env_kwargs=env_kwargs,
                    retry_errors=retry_errors,
                    ray=ray,
                    job_runner=job_runner,
                )

    return asyncio.run(run())
