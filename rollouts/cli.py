"""The `rollgym` command line."""

from __future__ import annotations

import os
from typing import Any, Optional

import typer

from rollgym.errors import RollgymError

from .engines.cli import ENGINE_ARG_HELP
from .demo import DEMO_LIMITS, DEMO_TASKS
from .limits import DEFAULT_MAX_TOKENS_PER_TURN, DEFAULT_MAX_TURNS, DEFAULT_TIMEOUT_S, Limits

os.environ.setdefault("HF_HUB_OFFLINE", "1")

app = typer.Typer(help="rollgym: token-exact rollouts for RL on LLM agents", no_args_is_help=True,
                  pretty_exceptions_enable=False)


@app.callback()
def _root() -> None:
    """rollgym: token-exact rollouts for RL on LLM agents."""


@app.command()
def version() -> None:
    """Print rollgym's version."""
    import rollgym

    typer.echo(rollgym.__version__)


@app.command("check-template")
def check_template(
    model: str = typer.Argument(..., help="Tokenizer directory, `hf:/path`, or `smollm2-135m`."),
    chat_template: Optional[str] = typer.Option(None, "--chat-template", help="A Jinja chat template file to use instead."),
) -> None:
    """Certify a (tokenizer, chat template) pair for token-exact multi-turn rollouts."""
    from rich.console import Console
    from rich.table import Table

    from .tokenizer_loading import load_chat_tokenizer

    console = Console()
    try:
        tok = load_chat_tokenizer(model, chat_template)
    except RollgymError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2)
    report = tok.certify(strict=False)
    table = Table(title=f"check-template {model}" + (f" --chat-template {chat_template}" if chat_template else ""))
    for col in ("probe", "status", "detail"):
        table.add_column(col, overflow="fold")
    colors = {"pass": "green", "fail": "red", "unsupported": "yellow"}
    for p in report.probes:
        table.add_row(p.name, f"[{colors.get(p.status, 'cyan')}]{p.status}[/]", p.detail)
    console.print(table)
    console.print(f"tool-call format: {report.tool_parser or 'none'}; stop token ids: {report.stop_token_ids}")
    if not report.passed:
        first = report.failures()[0]
        console.print(f"[red]REFUSED[/red]: probe {first.name!r} failed: {first.detail}")
        raise typer.Exit(1)
    console.print("[green]CERTIFIED[/green]: bridged trajectories are token-exact for this pair")


@app.command("token-demo")
def token_demo(model: str = typer.Option("smollm2-135m", help="Model spec whose tokenizer and template to use.")) -> None:
    """A token-exact demo: a scripted conversation, its trajectory, and what re-tokenizing would change."""
    from .token_demo import run_demo

    run_demo(model)


@app.command()
def demo(
    out: str = typer.Option("runs/demo", "--out", help="output directory (re-running resumes it)"),
    model: str = typer.Option("smollm2-135m", "--model"),
    n: int = typer.Option(2, "--n", min=1, help="samples per task"),
    num_tasks: int = typer.Option(DEMO_TASKS, "--num-tasks", min=1, help="how many of the bundled tasks"),
    max_turns: int = typer.Option(DEMO_LIMITS.max_turns, "--max-turns", min=1),
    max_tokens_per_turn: int = typer.Option(DEMO_LIMITS.max_tokens_per_turn, "--max-tokens-per-turn", min=1),
) -> None:
    """The main job on the embedded default model: rollouts on the bundled SWE tasks in Docker sandboxes
    (or, when no Docker engine can run, on the no-Docker Calculator environment), written to --out; then
    what the run proved, and a viewer (OUT/view.html)."""
    from rich.console import Console

    from rollgym.tokenization import ChatTokenizer

    from .demo import DEMO_TEMPERATURE, demo_env_kwargs, proof_lines, prove, write_proof
    from .engines import SamplingParams
    from .engines.registry import parse_spec
    from .generate import run_generate
    from .output import ROLLOUTS_FILE, read_rollouts
    from .policy import certified_tokenizer
    from .view import write_viewer

    env, tasks, env_kwargs, where = "rollgym/SWE-v0", "bundled", {}, "in Docker"
    try:
        from rollgym.envs.sandbox import ensure_engine

        ok, why = ensure_engine()
    except Exception as exc:  # no docker SDK connection at all
        ok, why = False, str(exc)
    if not ok:
        typer.echo(f"note: no Docker engine can run here ({why}); running the no-Docker environment "
                   "rollgym/Calculator-v0 instead", err=True)
        env, tasks, where = "rollgym/Calculator-v0", None, "in the environment"
    tok = None
    try:
        tok = certified_tokenizer(parse_spec(model).tokenizer_source or model, need_tools=True)
        # A turn cut by max_tokens is closed and answered (truncation "close"), so one long reply does not end the episode.
        tok = ChatTokenizer(tok.hf, chat_template=tok.template, truncation="close")
        if env == "rollgym/SWE-v0":
            env_kwargs = demo_env_kwargs(tok)
    except RollgymError:  # the model's own error is reported by run_generate below
        pass
    limits = DEMO_LIMITS.model_copy(update={"max_turns": max_turns, "max_tokens_per_turn": max_tokens_per_turn})
    code = run_generate(env=env, tasks=tasks, model=model, n=n, concurrency=4, out=out, resume=True, num_tasks=num_tasks,
                        limits=limits, sampling=SamplingParams(temperature=DEMO_TEMPERATURE, seed=0), env_kwargs=env_kwargs,
                        tokenizer=tok)
    path = os.path.join(out, ROLLOUTS_FILE)
    if code != 0 or not os.path.exists(path):  # a setup error, Ctrl-C (130) or SIGTERM (143)
        raise typer.Exit(code)
    console = Console(stderr=True)
    proof = prove(list(read_rollouts(path)), tok)
    write_proof(out, proof)
    console.print(f"[bold]What this run shows[/bold] ({proof['rollouts']} rollouts, {out}/proof.json)")
    for line in proof_lines(proof, where):
        console.print("  " + line, soft_wrap=True)
    view_path = write_viewer(out, tokenizer=model, log=lambda m: console.print(m))
    console.print(f"[bold]viewer[/bold]: {view_path}", soft_wrap=True)
    console.print(f"  open it in a browser, or serve it: rollgym view {out} --serve", soft_wrap=True)
    raise typer.Exit(code)


@app.command()
def view(
    source: str = typer.Argument(..., help="a run directory, a rollouts .jsonl, a proxy session .json, or a session URL"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="the HTML file to write (default: view.html beside the rollouts)"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="model spec or directory for token texts "
                                            "(default: the rollouts' own model)"),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="ROLLGYM_PROXY_API_KEY",
                                          help="the proxy's --api-key, for a session URL"),
    split: Optional[bool] = typer.Option(None, "--split/--single-file", help="data in chunk files beside the page, or all "
                                         "in the page (default: split above 2,000 rollouts)"),
    serve: bool = typer.Option(False, "--serve", help="serve the page over HTTP after writing it"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to serve on (loopback by default)"),
    port: int = typer.Option(8765, "--port"),
) -> None:
    """Write a run's token-level trajectory viewer: one self-contained HTML file that opens offline."""
    from .view import serve_viewer, write_viewer

    try:
        path = write_viewer(source, out, tokenizer=tokenizer, api_key=api_key, split=split,
                            log=lambda m: typer.echo(m, err=True))
    except RollgymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    files = path.with_name(path.stem + "_files")
    typer.echo(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB" + (f", data in {files}/" if files.is_dir() else "")
               + "): open it in a browser")
    if serve:
        typer.echo(f"serving it at http://{host}:{port}/ (Ctrl-C to stop)")
        serve_viewer(path, host=host, port=port)


from rollgym.rollouts.engines.cli import register as _register_engine_commands  # noqa: E402

_register_engine_commands(app)


sandbox_app = typer.Typer(help="Docker sandboxes", no_args_is_help=True)
image_app = typer.Typer(help="Sandbox images", no_args_is_help=True)
task_app = typer.Typer(help="Authoring SWE tasks", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(image_app, name="image")
app.add_typer(task_app, name="task")


DOCKER_HOST_HELP = "a Docker daemon (unix://, tcp://, ssh://); repeat for several (default: $ROLLGYM_DOCKER_HOSTS, else the default engine)"


@sandbox_app.command("prune")
def sandbox_prune(
    all_: bool = typer.Option(False, "--all", help="remove every rollgym container, not only orphans"),
    run_id: str = typer.Option(None, "--run-id", help="remove the containers of this run"),
    docker_host: Optional[list[str]] = typer.Option(None, "--docker-host", help=DOCKER_HOST_HELP),
) -> None:
    """Remove leftover rollgym containers (found by label) on every Docker host: orphans by default."""
    from rollgym.envs.sandbox.host_listing import prune_hosts

    removed, failed = prune_hosts(all_containers=all_, run_id=run_id, docker_host=docker_host or None)
    typer.echo(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
    for host, why in failed.items():
        typer.echo(f"{host}: not pruned: {why}", err=True)
    if failed:
        raise typer.Exit(1)


@sandbox_app.command("list")
def sandbox_list(docker_host: Optional[list[str]] = typer.Option(None, "--docker-host", help=DOCKER_HOST_HELP)) -> None:
    """List rollgym containers (running or not) on every Docker host: NAME, HOST, STATE, RUN, TASK."""
    from rollgym.envs.sandbox.host_listing import list_hosts, table

    rows, failed = list_hosts(docker_host=docker_host or None)
    if rows:
        typer.echo(table(rows))
    for host, why in failed.items():
        typer.echo(f"{host}: not listed: {why}", err=True)
    if failed:
        raise typer.Exit(1)


@image_app.command("build")
def image_build(context: str = typer.Argument(..., help="a directory with a Dockerfile"),
                repo: str = typer.Option(..., "--repo", help="image name; the tag is the context's content hash")) -> None:
    """Build an image from a Dockerfile context, tagged (and cached) by the context's content hash."""
    from rollgym.envs.sandbox import build_image

    typer.echo(build_image(context, repo, log=typer.echo))


@image_app.command("bootstrap")
def image_bootstrap(
    force: bool = typer.Option(False, "--force", help="rebuild even if the content-hashed tag exists"),
    tasks: bool = typer.Option(True, "--tasks/--no-tasks", help="also build the bundled SWE task images"),
) -> None:
    """Build the offline base image (debootstrap + docker import; no registry needed), then task images."""
    from rollgym.envs.sandbox import bootstrap_base_image, ensure_engine

    ok, why = ensure_engine()
    if not ok:
        typer.echo(f"no Docker engine: {why}", err=True)
        raise typer.Exit(1)
    typer.echo(bootstrap_base_image(log=typer.echo, force=force))
    if tasks:
        from rollgym.envs.swe import build_task_images, load_bundled_tasks

        for tag in build_task_images(load_bundled_tasks(), log=typer.echo):
            typer.echo(tag)


@app.command()
def validate(
    tasks: str = typer.Argument("bundled", help="a JSONL file of SWE task rows, or 'bundled'"),
    workers: int = typer.Option(2, "--workers", "-j", help="tasks validated in parallel"),
    only: list[str] = typer.Option(None, "--only", help="instance ids to validate"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per task instead of the table"),
) -> None:
    """Check SWE tasks: the gold patch must resolve each one and the empty patch must not. Exit 0: all valid;
    1: a task is invalid; 3: a task could not be run (image build, Docker, missing sdist) and none is invalid;
    2: usage error or no Docker engine; 130/143: Ctrl-C/SIGTERM, with every container it started removed."""
    from .swe_cli import run_validate

    raise typer.Exit(run_validate(tasks, workers, only, as_json))


@task_app.command("build")
def task_build(
    tasks: str = typer.Argument(..., help="a JSONL file of SWE task rows (FAIL_TO_PASS may be [])"),
    only: list[str] = typer.Option(None, "--only", help="instance ids to build"),
    tests: list[str] = typer.Option(None, "--tests", help="test files or directories to run (default: all that "
                                    "pytest collects in the workdir)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per task instead of the tables"),
) -> None:
    """Build each task's image and run its tests with the empty and with the gold patch: prints base_commit, each
    test's outcomes and suggested role, and the FAIL_TO_PASS / PASS_TO_PASS to paste into the row. Exit 0: the row
    is right; 1: something in it to fix (shown); 3: a task could not be built or run; 2: usage, no Docker."""
    from .swe_cli import run_task_build

    raise typer.Exit(run_task_build(tasks, only, tests, as_json))


def ray_options(address: str | None, resources: list[str] | None, max_retries: int, workers: int) -> Any:
    """`--ray`, `--ray-resource`, `--max-retries` as a `RayConfig` (None: one process, no Ray)."""
    from .distributed.config import RayConfig

    if address is None and not resources and workers == 1:
        return None
    pairs = {}
    for item in resources or []:
        name, _, amount = item.partition("=")
        try:
            pairs[name.strip()] = float(amount or 1)
        except ValueError:
            raise typer.BadParameter(f"--ray-resource {item!r}: expected NAME=AMOUNT, e.g. docker=1") from None
    return RayConfig(address=None if address in (None, "", "local") else address, resources=pairs,
                     max_retries=max_retries, actors=workers if workers > 1 else None)


@app.command("generate")
def generate_cmd(
    env: str = typer.Option("rollgym/Calculator-v0", "--env", help="registered environment id"),
    tasks: Optional[str] = typer.Option(None, "--tasks", help="JSONL file, datasets directory, `bundled` (SWE), or omitted: the env's own tasks"),
    model: str = typer.Option("smollm2-135m", "--model", help="engine spec (see `rollgym engines`)"),
    n: int = typer.Option(4, "--n", min=1, help="samples per task (the GRPO group size)"),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    workers: int = typer.Option(1, "--workers", min=1, help="Ray actors (processes), each with its own engine and event "
                                "loop; without --ray, on a local Ray instance"),
    ray: Optional[str] = typer.Option(None, "--ray", help="run on Ray: `auto` (this machine's cluster), "
                                      "`ray://HEAD:10001`, or `local` (a local instance sized by --workers)"),
    ray_resource: Optional[list[str]] = typer.Option(None, "--ray-resource", help="NAME=AMOUNT a Ray actor needs "
                                                     "(repeatable), e.g. docker=1 for nodes started with "
                                                     "--resources '{\"docker\": 1}'"),
    max_retries: int = typer.Option(1, "--max-retries", min=0, help="times a rollout lost with its Ray actor or node runs again"),
    out: str = typer.Option(..., "--out", help="output directory (rollouts.jsonl, summary.json)"),
    resume: bool = typer.Option(False, "--resume", help="skip (task, sample) pairs already in the output"),
    retry_errors: bool = typer.Option(True, "--retry-errors/--no-retry-errors",
                                      help="on --resume, run again the rollouts that failed on infrastructure (engine, sandbox, internal)"),
    num_tasks: Optional[int] = typer.Option(None, "--num-tasks", min=1, help="use only the first N tasks"),
    max_turns: int = typer.Option(DEFAULT_MAX_TURNS, "--max-turns", min=1),
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS_PER_TURN, "--max-tokens", min=1, help="sampled tokens per turn"),
    max_total_tokens: Optional[int] = typer.Option(None, "--max-total-tokens", min=1),
    timeout: float = typer.Option(DEFAULT_TIMEOUT_S, "--timeout", min=0, help="wall-clock limit per rollout, seconds (0: none)"),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0),
    top_p: float = typer.Option(1.0, "--top-p"),
    top_k: int = typer.Option(0, "--top-k", min=0),
    seed: Optional[int] = typer.Option(0, "--seed", help="base seed; each (task, sample) gets its own"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="tokenizer directory (for vllm: specs without #MODEL)"),
    chat_template: Optional[str] = typer.Option(None, "--chat-template", help="Jinja chat template file"),
    engine_arg: Optional[list[str]] = typer.Option(None, "--engine-arg", "-E", help=ENGINE_ARG_HELP),
    docker_host: Optional[list[str]] = typer.Option(None, "--docker-host", help="sandboxes on this Docker daemon; repeat "
                                                    "to spread them over several (sets $ROLLGYM_DOCKER_HOSTS for the run)"),
) -> None:
    """Batch-generate rollouts to disk: resumable, one JSON line per rollout, with a summary."""
    if docker_host:  # in the environment, so workers and locally started Ray actors inherit it
        os.environ["ROLLGYM_DOCKER_HOSTS"] = ",".join(docker_host)
    from .engines import SamplingParams
    from .engines.cli import parse_engine_args
    from .generate import run_generate

    limits = Limits(max_turns=max_turns, max_tokens_per_turn=max_tokens, max_total_tokens=max_total_tokens, timeout_s=timeout or None)
    sampling = SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)
    code = run_generate(env=env, tasks=tasks, model=model, n=n, concurrency=concurrency, out=out, resume=resume,
                        num_tasks=num_tasks, limits=limits, sampling=sampling, tokenizer=tokenizer, chat_template=chat_template,
                        workers=workers, engine_kwargs=parse_engine_args(engine_arg), retry_errors=retry_errors,
                        ray=ray_options(ray, ray_resource, max_retries, workers))
    raise typer.Exit(code)


@app.command("export")
def export_cmd(
    run_dir: str = typer.Argument(..., help="a `rollgym generate --out` directory"),
    out: Optional[str] = typer.Option(None, "--out", help="Parquet file (default: RUN_DIR/rollouts.parquet)"),
    include_errored: bool = typer.Option(False, "--include-errored"),
) -> None:
    """Write the rollouts as Parquet with TRL-ready columns (prompt_ids, completion_ids, logprobs, env_mask, rewards)."""
    from .export import export_parquet

    try:
        path, count = export_parquet(run_dir, out, include_errored)
    except (FileNotFoundError, RollgymError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo(f"wrote {count} rows to {path}")


@app.command("proxy")
def proxy_cmd(
    model: str = typer.Option("smollm2-135m", "--model", help="engine spec (token-in/token-out; see `rollgym engines`)"),
    chat_template: Optional[str] = typer.Option(None, "--chat-template", help="Jinja chat template file"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="tokenizer directory (for vllm: specs without #MODEL)"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (other than loopback needs --api-key)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="ROLLGYM_PROXY_API_KEY",
                                          help="require `Authorization: Bearer KEY` on every request"),
    session: str = typer.Option("default", "--session", help="id of a session created at startup"),
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS_PER_TURN, "--max-tokens", min=1, help="max_tokens when a request gives none"),
    idle_timeout: float = typer.Option(3600.0, "--idle-timeout", help="seconds before an unused session expires"),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0,
                                                help="sample every call at this temperature, whatever the agent sends"),
    seed: Optional[int] = typer.Option(None, "--seed", help="sample calls that send no seed reproducibly (per session and call)"),
    truncation: str = typer.Option("close", "--truncation",
                                   help="a reply cut at max_tokens: 'close' (the agent's next call continues the segment) or 'end'"),
    engine_arg: Optional[list[str]] = typer.Option(None, "--engine-arg", "-E", help=ENGINE_ARG_HELP),
) -> None:
    """Serve a recording OpenAI-compatible proxy: agents call /sessions/{id}/v1, rollgym records token-exact rollouts."""
    from .engines.cli import parse_engine_args
    from .proxy.cli import serve
    from .proxy.store import ProxySettings

    if truncation not in ("close", "end"):
        raise typer.BadParameter(f"must be 'close' or 'end', got {truncation!r}", param_hint="--truncation")
    settings = ProxySettings(default_max_tokens=max_tokens, idle_timeout_s=idle_timeout, seed=seed, truncation=truncation,
                             temperature=temperature)
    try:
        code = serve(model, chat_template=chat_template, tokenizer=tokenizer, host=host, port=port, api_key=api_key,
                     session_id=session, settings=settings, log=typer.echo, engine_kwargs=parse_engine_args(engine_arg))
    except RollgymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    except KeyboardInterrupt:  # Ctrl-C while the model loads, before the server runs
        code = 130
    raise typer.Exit(code)


def bare_ray_flag(argv: list[str]) -> list[str]:
    """`--ray` given without an address (last, or followed by another option) means a local Ray instance."""
    out = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append("local")
    return out


def main() -> None:
    import sys

    sys.argv[1:] = bare_ray_flag(sys.argv[1:])
    app()

if __name__ == "__main__":
    main()
