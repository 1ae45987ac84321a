"""`rollgym generate` and `rollgym export`: a batch of rollouts to disk, with exit codes a scheduler can act on,
and its rollouts as Parquet."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from rollgym.cli.engines import ENGINE_ARG_HELP, parse_engine_args
from rollgym.engines import SamplingParams
from rollgym.errors import ClusterLostError, RollgymError, UsageError, WorkerError
from rollgym.limits import DEFAULT_MAX_TOKENS_PER_TURN, DEFAULT_MAX_TURNS, DEFAULT_TIMEOUT_S, Limits
from rollgym.rollouts.generate import generate
from rollgym.rollouts.output import INFRA_CATEGORIES, OutputExistsError
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.stopping import Terminated, exit_code
from rollgym.rollouts.summary import RunSummary
from rollgym.rollouts.tasks import load_tasks


def ray_options(address: str | None, resources: list[str] | None, max_retries: int, workers: int) -> Any:
    """`--ray`, `--ray-resource`, `--max-retries` as a `RayConfig` (None: one process, no Ray)."""
    from rollgym.integrations.ray.config import RayConfig

    if address is None and not resources and workers == 1:
        return None
    pairs = {}
    for item in resources or []:
        name, _, amount = item.partition("=")
        try:
            pairs[name.strip()] = float(amount or 1)
        except ValueError:
            raise typer.BadParameter(f"--ray-resource {item!r}: expected NAME=AMOUNT, e.g. docker=1") from None
    return RayConfig(
        address=None if address in (None, "", "local") else address,
        resources=pairs,
        max_retries=max_retries,
        actors=workers if workers > 1 else None,
    )


def generate_cmd(
    env: str | None = typer.Option(
        None,
        "--env",
        help="registered environment id, or MODULE:ID for one your module registers \\[default: rollgym/Calculator-v0; with --agent rollgym/SWE-v0]",
    ),
    tasks: str | None = typer.Option(
        None, "--tasks", help="JSONL file, datasets directory, `bundled` (SWE), or omitted: the env's own tasks"
    ),
    model: str = typer.Option("smollm2-135m", "--model", help="engine spec (see `rollgym engines`)"),
    n: int = typer.Option(4, "--n", min=1, help="samples per task (the GRPO group size)"),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    workers: int = typer.Option(
        1,
        "--workers",
        min=1,
        help="Ray actors (processes), each with its own engine and event loop; without --ray, on a local Ray instance",
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="run on Ray: `auto` (this machine's cluster), "
        "`ray://HEAD:10001`, or `local` (a local instance sized by --workers)",
    ),
    ray_resource: list[str] | None = typer.Option(
        None,
        "--ray-resource",
        help="NAME=AMOUNT a Ray actor needs "
        "(repeatable), e.g. docker=1 for nodes started with "
        "--resources '{\"docker\": 1}'",
    ),
    max_retries: int = typer.Option(
        1, "--max-retries", min=0, help="times a rollout lost with its Ray actor or node runs again"
    ),
    out: str = typer.Option(..., "--out", help="output directory (rollouts.jsonl, summary.json)"),
    resume: bool = typer.Option(False, "--resume", help="skip (task, sample) pairs already in the output"),
    retry_errors: bool = typer.Option(
        True,
        "--retry-errors/--no-retry-errors",
        help="on --resume, run again the rollouts that failed on infrastructure (engine, sandbox, internal)",
    ),
    num_tasks: int | None = typer.Option(None, "--num-tasks", min=1, help="use only the first N tasks"),
    max_turns: int = typer.Option(DEFAULT_MAX_TURNS, "--max-turns", min=1),
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS_PER_TURN, "--max-tokens", min=1, help="sampled tokens per turn"),
    max_total_tokens: int | None = typer.Option(None, "--max-total-tokens", min=1),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT_S, "--timeout", min=0, help="wall-clock limit per rollout, seconds (0: none)"
    ),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0),
    top_p: float = typer.Option(1.0, "--top-p"),
    top_k: int = typer.Option(0, "--top-k", min=0),
    seed: int | None = typer.Option(0, "--seed", help="base seed; each (task, sample) gets its own"),
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="tokenizer directory (for vllm: specs without #MODEL)"
    ),
    chat_template: str | None = typer.Option(None, "--chat-template", help="Jinja chat template file"),
    history: str = typer.Option(
        "keep",
        "--history",
        help="keep: each turn's prompt extends the last exactly (one sample per rollout); template: each prompt is "
        "what the template renders (a rewrite of history starts a new sample); docs/tokenization.md",
    ),
    truncation: str = typer.Option(
        "end",
        "--truncation",
        help="a turn cut by --max-tokens: end (the rollout stops: truncated_completion) or close (the turn is closed "
        "with the template's end token, masked, and the episode goes on)",
    ),
    engine_arg: list[str] | None = typer.Option(None, "--engine-arg", "-E", help=ENGINE_ARG_HELP),
    env_arg: list[str] | None = typer.Option(
        None,
        "--env-arg",
        help="environment argument KEY=VALUE for `make`, repeatable (VALUE as JSON when it parses), e.g. "
        "url=http://127.0.0.1:8000 for openenv/env-v0, environment=my_taskset for verifiers/env-v0",
    ),
    docker_host: list[str] | None = typer.Option(
        None,
        "--docker-host",
        help="sandboxes on this Docker daemon; repeat "
        "to spread them over several (sets $ROLLGYM_DOCKER_HOSTS for the run)",
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="run this agent CLI in each task's sandbox, through a recording proxy, instead of rollgym's tool loop: "
        "claude-code, codex, opencode, mini-swe-agent, aider (docs/agents.md)",
    ),
    agent_option: list[str] | None = typer.Option(
        None,
        "--agent-option",
        help="KEY=VALUE for --agent (repeatable; VALUE as JSON when it parses), e.g. step_limit=4",
    ),
) -> None:
    """Batch-generate rollouts to disk: resumable, one JSON line per rollout, with a summary."""
    if docker_host:  # in the environment, so workers and locally started Ray actors inherit it
        os.environ["ROLLGYM_DOCKER_HOSTS"] = ",".join(docker_host)
    env = env or ("rollgym/SWE-v0" if agent is not None else "rollgym/Calculator-v0")
    env_kwargs = parse_engine_args(env_arg, option="--env-arg")
    if agent is not None and env_kwargs:
        raise typer.BadParameter("--env-arg is for rollgym's tool loop; an --agent run takes the environment as made")
    if agent is not None:
        from rollgym.cli.agents import agent_options, run_agent_batch

        code = run_agent_batch(
            agent=agent,
            options=agent_options(agent_option, max_tokens),
            env=env,
            tasks=tasks,
            model=model,
            n=n,
            concurrency=concurrency,
            out=out,
            resume=resume,
            num_tasks=num_tasks,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=timeout or None,
            retry_errors=retry_errors,
            tokenizer=tokenizer,
            chat_template=chat_template,
            engine_kwargs=parse_engine_args(engine_arg),
            ray=ray_options(ray, ray_resource, max_retries, workers),
            workers=workers,
        )
        raise typer.Exit(code)
    limits = Limits(
        max_turns=max_turns,
        max_tokens_per_turn=max_tokens,
        max_total_tokens=max_total_tokens,
        timeout_s=timeout or None,
    )
    sampling = SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)
    code = run_generate(
        env=env,
        tasks=tasks,
        model=model,
        n=n,
        concurrency=concurrency,
        out=out,
        resume=resume,
        num_tasks=num_tasks,
        limits=limits,
        sampling=sampling,
        tokenizer=tokenizer,
        chat_template=chat_template,
        workers=workers,
        engine_kwargs=parse_engine_args(engine_arg),
        retry_errors=retry_errors,
        ray=ray_options(ray, ray_resource, max_retries, workers),
        history=history,
        truncation=truncation,
        env_kwargs=env_kwargs,
    )
    raise typer.Exit(code)


def export_cmd(
    run_dir: str = typer.Argument(..., help="a `rollgym generate --out` directory"),
    out: str | None = typer.Option(
        None, "--out", help="output file (default: RUN_DIR/rollouts.parquet, verl.jsonl, skyrl.json, ...)"
    ),
    format: str = typer.Option(
        "trl",
        "--format",
        help="trl (Parquet, TRL's columns), verl, skyrl, openrlhf, verifiers, slime, areal, art (docs/trainers.md)",
    ),
    include_errored: bool = typer.Option(False, "--include-errored"),
    prompt_length: int | None = typer.Option(None, "--prompt-length", help="verl: rollout.prompt_length to fit to"),
    response_length: int | None = typer.Option(
        None, "--response-length", help="verl: rollout.response_length; skyrl: max_generate_length"
    ),
    max_length: int | None = typer.Option(None, "--max-length", help="openrlhf: data.max_len to fit to"),
) -> None:
    """Write the rollouts in a trainer's batch format: TRL's columns as Parquet (prompt_ids, completion_ids, logprobs,
    env_mask, rewards), verl's AgentLoopOutput, OpenRLHF's executor outputs, verifiers' Episode records or ART's
    TrajectoryGroups as JSON lines, or SkyRL's GeneratorOutput
    (docs/trainers.md)."""
    try:
        if format == "trl":
            from rollgym.integrations.export import export_parquet

            path, count = export_parquet(run_dir, out, include_errored)
        elif format == "verl":
            from rollgym.integrations.verl.export import export_verl

            path, count = export_verl(
                run_dir,
                out,
                include_errored=include_errored,
                prompt_length=prompt_length,
                response_length=response_length,
            )
        elif format == "skyrl":
            from rollgym.integrations.skyrl.export import export_skyrl

            path, count = export_skyrl(run_dir, out, include_errored=include_errored, response_length=response_length)
        elif format == "verifiers":
            from rollgym.integrations.verifiers.export import export_verifiers

            path, count = export_verifiers(run_dir, out, include_errored=include_errored)
        elif format == "openrlhf":
            from rollgym.integrations.openrlhf.export import export_openrlhf

            path, count = export_openrlhf(run_dir, out, include_errored=include_errored, max_length=max_length)
        elif format == "slime":
            from rollgym.integrations.slime.export import export_slime

            path, count = export_slime(run_dir, out, include_errored=include_errored, response_length=response_length)
        elif format == "areal":
            from rollgym.integrations.areal.export import export_areal

            path, count = export_areal(run_dir, out)
        elif format == "art":
            from rollgym.integrations.art.export import export_art

            path, count = export_art(run_dir, out, include_errored=include_errored)
        else:
            raise UsageError(f"unknown format {format!r}: trl, verl, skyrl, openrlhf, verifiers, slime, areal or art")
    except (FileNotFoundError, RollgymError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {count} rows to {path}")


def print_summary(summary: RunSummary, console: Console) -> None:
    table = Table(title="summary")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.to_dict().items():
        if key == "per_task":
            continue
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    console.print(table)


def run_generate(
    *,
    env: str,
    tasks: str | None,
    model: str,
    n: int,
    concurrency: int,
    out: str,
    resume: bool,
    num_tasks: int | None,
    limits: Limits,
    sampling: SamplingParams,
    tokenizer: Any = None,
    chat_template: str | None = None,
    workers: int = 1,
    engine_kwargs: dict | None = None,
    env_kwargs: dict | None = None,
    retry_errors: bool = True,
    ray: Any = None,
    history: str = "keep",
    truncation: str = "end",
) -> int:
    """The `rollgym generate` job: the policy and tasks from specs, then `generate`; prints the summary; exit code
    (0; 1 when every rollout failed on infrastructure; 2 for a setup error; 130/143 when interrupted)."""
    console = Console(stderr=True)
    try:
        # a wrong --tasks, --env or --env-arg fails here, before any model loads
        rows = load_tasks(env, tasks, num_tasks=num_tasks, env_kwargs=env_kwargs)
        policy = Policy(
            model,
            tokenizer=tokenizer,
            chat_template=chat_template,
            log=console.print,
            engine_kwargs=engine_kwargs,
            history=history,
            truncation=truncation,
        )
        if workers == 1 and ray is None:
            policy.engine  # noqa: B018 - a model that cannot load fails here (Ray actors build their own)
    except Exception as exc:  # noqa: BLE001 - a setup error (bad spec, missing model or tasks): said in one line, exit 2
        console.print(f"[red]error:[/red] {exc}")
        return 2
    return report_run(
        lambda: generate(
            env,
            policy,
            out=out,
            tasks=rows,
            n=n,
            concurrency=concurrency,
            limits=limits,
            sampling=sampling,
            resume=resume,
            workers=workers,
            console=console,
            env_kwargs=env_kwargs,
            retry_errors=retry_errors,
            ray=ray,
        ),
        out,
        console,
    )


def report_run(call: Callable[[], RunSummary], out: str, console: Console) -> int:
    """Run the batch `call` starts and say how it ended: the summary and the infrastructure verdict (0, or 1 when
    every rollout failed on infrastructure), 1 for a lost cluster, 2 for a run that could not start, 130/143 when
    interrupted."""
    try:
        summary = call()
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`Terminated`)
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        console.print(
            f"[yellow]{what}[/yellow]: finished rollouts are in {out}/rollouts.jsonl; "
            "run the same command with --resume to continue"
        )
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


def infra_verdict(summary: RunSummary, out: str, console: Console) -> int:
    """Say how many rollouts failed on infrastructure (a resume runs them again); 1 if all of them did."""
    failed, total = summary.infra_failures, summary.rollouts
    if not failed:
        return 0
    kinds = ", ".join(f"{k}: {v}" for k, v in summary.errors.items() if k in INFRA_CATEGORIES)
    if failed == total:
        console.print(
            f"[red]error:[/red] every rollout ({total}) failed on infrastructure ({kinds}); nothing to train on. "
            f"Fix the cause (the errors are in {out}/rollouts.jsonl), then run the same command with --resume"
        )
        return 1
    console.print(
        f"[yellow]{failed} of {total} rollouts failed on infrastructure ({kinds})[/yellow]: "
        "run the same command with --resume to run them again"
    )
    return 0


def register(app: typer.Typer) -> None:
    """Add `rollgym generate` and `rollgym export` to the CLI."""
    app.command("generate")(generate_cmd)
    app.command("export")(export_cmd)
