"""`rollgym sandbox list|prune` and `rollgym images build|bootstrap|pull`: the Docker side of rollgym."""

from __future__ import annotations

import typer

sandbox_app = typer.Typer(help="Docker sandboxes", no_args_is_help=True)
image_app = typer.Typer(help="Sandbox images", no_args_is_help=True)


DOCKER_HOST_HELP = "a Docker daemon (unix://, tcp://, ssh://); repeat for several (default: $ROLLGYM_DOCKER_HOSTS, else the default engine)"


@sandbox_app.command("prune")
def sandbox_prune(
    all_: bool = typer.Option(False, "--all", help="remove every rollgym container, not only orphans"),
    run_id: str = typer.Option(None, "--run-id", help="remove the containers of this run"),
    run_dir: str | None = typer.Option(
        None,
        "--run",
        help="a `rollgym generate --out` folder: remove the sandboxes its record (sandboxes.jsonl) lists as not "
        "ended, on the host each was started on, and record how each ended",
    ),
    docker_host: list[str] | None = typer.Option(None, "--docker-host", help=DOCKER_HOST_HELP),
    prepared: bool = typer.Option(
        False, "--prepared", help="also remove the prepared images of tasks (SandboxConfig.prepare) no container uses"
    ),
) -> None:
    """Remove leftover rollgym containers (found by label) on every Docker host: orphans by default."""
    from rollgym.envs.sandbox.host_listing import prune_hosts

    if run_dir is not None:
        _prune_run(run_dir)
        return
    removed, failed = prune_hosts(
        all_containers=all_, run_id=run_id, docker_host=docker_host or None, prepared_images=prepared
    )
    typer.echo(
        f"removed {len(removed)} container(s)"
        + (" and prepared image(s)" if prepared else "")
        + (": " + ", ".join(removed) if removed else "")
    )
    for host, why in failed.items():
        typer.echo(f"{host}: not pruned: {why}", err=True)
    if failed:
        raise typer.Exit(1)


def _prune_run(run_dir: str) -> None:
    """`prune --run DIR`: exit 2 when the folder has no record, 1 when a host did not answer."""
    from pathlib import Path

    from rollgym.envs.sandbox.host_listing import prune_run
    from rollgym.envs.sandbox.record import record_path

    if not record_path(run_dir).exists():
        typer.echo(f"error: {record_path(run_dir)} does not exist (not a `rollgym generate --out` folder?)", err=True)
        raise typer.Exit(2)
    outcome = prune_run(str(Path(run_dir)))
    typer.echo(
        f"{run_dir}: removed {len(outcome.removed)} sandbox(es) still running"
        + (": " + ", ".join(outcome.removed) if outcome.removed else "")
        + f"; {len(outcome.gone)} had ended by themselves (lease or TTL); {outcome.ended_before} were closed by the run"
    )
    for name, why in outcome.failed.items():
        typer.echo(f"{name}: not pruned: {why}", err=True)
    if outcome.failed:
        raise typer.Exit(1)


@sandbox_app.command("list")
def sandbox_list(docker_host: list[str] | None = typer.Option(None, "--docker-host", help=DOCKER_HOST_HELP)) -> None:
    """List rollgym containers (running or not) on every Docker host: NAME, HOST, STATE, OWNER (machine:pid), LEASE
    (seconds since its owner last renewed it / its lease), RUN, TASK."""
    from rollgym.envs.sandbox.host_listing import list_hosts, table

    rows, failed = list_hosts(docker_host=docker_host or None, lease_ages=True)
    if rows:
        typer.echo(table(rows))
    for host, why in failed.items():
        typer.echo(f"{host}: not listed: {why}", err=True)
    if failed:
        raise typer.Exit(1)


@image_app.command("build")
def image_build(
    context: str = typer.Argument(..., help="a directory with a Dockerfile, or Harbor task folders"),
    repo: str | None = typer.Option(None, "--repo", help="image name; the tag is the context's content hash"),
) -> None:
    """Build an image from a Dockerfile context, tagged (and cached) by the context's content hash; or every image of
    a Harbor task folder (or a folder of them), ahead of a run: exit 3 when one cannot be built or had."""
    from rollgym.envs.harbor.folders import is_harbor_source

    if is_harbor_source(context):
        from rollgym.cli.harbor import build_harbor_images

        raise typer.Exit(build_harbor_images(context))
    if repo is None:
        typer.echo("error: --repo is required to build a Dockerfile context", err=True)
        raise typer.Exit(2)
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


@image_app.command("pull")
def image_pull(
    tasks: str = typer.Argument(
        ...,
        help="SWE task rows: a JSONL or Parquet file, a `datasets` folder, an SWE-bench task folder or task repo, "
        "or 'bundled'",
    ),
    docker_host: list[str] | None = typer.Option(None, "--docker-host", help=DOCKER_HOST_HELP),
) -> None:
    """Get every task's image onto every Docker host before a run: pulled from its registry (progress shown), or
    built from its task folder or sdist, each image once per host. Exit 0: every image is there; 3: some task's image
    cannot be had (named, with the registry's answer); 2: the tasks cannot be read."""
    from rollgym.envs.sandbox import ImageError, client_for, configured_hosts
    from rollgym.envs.sandbox.host_images import ensure_image_on
    from rollgym.envs.swe import load_bundled_tasks, parse_tasks
    from rollgym.envs.swe.images import ensure_task_image, task_image_name
    from rollgym.errors import RollgymError

    try:
        rows = load_bundled_tasks() if tasks == "bundled" else parse_tasks(tasks)
    except (OSError, RollgymError) as exc:
        typer.echo(f"error: cannot read tasks from {tasks}: {exc}", err=True)
        raise typer.Exit(2) from None
    hosts = configured_hosts(docker_host or None)
    done: dict[tuple[str, str], str | None] = {}
    for task in rows:
        for i, host in enumerate(hosts):
            key = (task.instance_id if not (task.image or task.image_name) else task_image_name(task), host)
            if key in done:
                continue
            try:
                if i == 0:
                    name = ensure_task_image(task, log=lambda m: typer.echo(m, err=True), client=client_for(host))
                else:
                    name = task_image_name(task)
                    ensure_image_on(name, host, hosts[:1], log=lambda m: typer.echo(m, err=True))
                done[key] = None
                typer.echo(f"{host}: {name}")
            except (ImageError, RollgymError) as exc:
                done[key] = str(exc)
                typer.echo(f"{host}: {task.instance_id}: {exc}", err=True)
    if any(error is not None for error in done.values()):
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Add the `sandbox` and `images` command groups to the CLI (`image` is the same group)."""
    app.add_typer(sandbox_app, name="sandbox")
    app.add_typer(image_app, name="images")
    app.add_typer(image_app, name="image", hidden=True)
