"""`rollgym validate` and `rollgym task build`: SWE task checks shown as tables or JSON lines, with exit codes
that tell an invalid task (1) from one that could not be run (3)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rollgym.rollouts.stopping import exit_code, sigterm_raises_terminated

if TYPE_CHECKING:
    from rollgym.envs.swe import SWETask
    from rollgym.envs.swe.authoring import BuildReport
    from rollgym.envs.swe.validate import ValidationRow

VALID, INVALID, USAGE, CANNOT_RUN = 0, 1, 2, 3
VERDICT_STYLE = {"valid": "green", "invalid": "red", "cannot_run": "yellow"}
VERDICT_TEXT = {"valid": "ok", "invalid": "FAIL: ", "cannot_run": "CANNOT RUN: "}
ROLE_STYLE = {"F2P": "bold green", "P2P": "cyan", "": "dim"}
ROLE_ORDER = {"F2P": 0, "": 1, "P2P": 2}


def load_swe_tasks(source: str, only: list[str] | None) -> list[SWETask]:
    """The rows of a JSONL file (or 'bundled'), narrowed by --only; a usage error (exit 2) in one line."""
    from rollgym.envs.swe import load_bundled_tasks, parse_tasks
    from rollgym.errors import RollgymError

    try:
        rows = load_bundled_tasks() if source == "bundled" else parse_tasks(source)
    except (OSError, RollgymError) as exc:
        typer.echo(f"error: cannot read tasks from {source}: {exc}", err=True)
        raise typer.Exit(USAGE) from None
    if only:
        unknown = sorted(set(only) - {r.instance_id for r in rows})
        if unknown:
            typer.echo(f"error: no task {', '.join(unknown)} in {source}", err=True)
            raise typer.Exit(USAGE)
        rows = [r for r in rows if r.instance_id in set(only)]
    return rows


def need_docker() -> None:
    from rollgym.envs.sandbox import ensure_engine

    ok, why = ensure_engine()
    if not ok:
        typer.echo(f"no Docker engine: {why}", err=True)
        raise typer.Exit(USAGE) from None


def interruptible(job) -> int:
    """Run `job()` (an exit code) with SIGTERM handled as Ctrl-C: 130 after Ctrl-C, 143 after SIGTERM."""
    try:
        with sigterm_raises_terminated():
            return job()
    except KeyboardInterrupt as exc:
        typer.echo("interrupted: every container this run started was removed", err=True)
        return exit_code(exc)


def run_validate(source: str, workers: int, only: list[str] | None, as_json: bool) -> int:
    """`rollgym validate`: 0 all valid; 1 some task invalid; 3 some task could not be run (and none invalid)."""
    from rollgym.envs.harbor.folders import is_harbor_source
    from rollgym.envs.swe.validate import validate_tasks

    if is_harbor_source(source):  # Harbor task folders: their solution must score 1, nothing below 1
        from rollgym.cli.harbor import run_validate_harbor

        return run_validate_harbor(source, workers, only, as_json)
    need_docker()
    rows = load_swe_tasks(source, only)

    def job() -> int:
        results = validate_tasks(rows, workers=workers, log=lambda m: typer.echo(m, err=True))
        return report_verdicts(results, as_json, validate_table)

    return interruptible(job)


def report_verdicts(results: list[Any], as_json: bool, table: Callable[[list[Any]], Table]) -> int:
    """Print the verdict rows (JSON lines, or `table`'s table) and return validate's exit code for them."""
    if as_json:
        for r in results:
            typer.echo(r.model_dump_json())
    else:
        Console(width=200).print(table(results))
    verdicts = {r.verdict for r in results}
    return INVALID if "invalid" in verdicts else CANNOT_RUN if "cannot_run" in verdicts else VALID


def validate_table(results: list[ValidationRow]) -> Table:
    table = Table(title=f"rollgym validate: {len(results)} task(s)")
    for col in ("task", "gold", "F2P", "P2P", "empty", "F2P failing w/o patch", "time (s)", "verdict"):
        table.add_column(col, overflow="fold")
    for r in results:
        verdict = Text(VERDICT_TEXT[r.verdict] + r.problem, style=VERDICT_STYLE[r.verdict])
        if r.gold is None or r.empty is None:
            table.add_row(r.instance_id, "-", "-", "-", "-", "-", "-", verdict)
            continue
        failing = "-" if r.f2p_failing_without_patch is None else f"{r.f2p_failing_without_patch}/{r.f2p_total}"
        table.add_row(
            r.instance_id,
            f"{r.gold.status}/{'resolved' if r.gold.resolved else 'unresolved'}",
            f"{r.gold.f2p_passed_frac:.2f}",
            f"{r.gold.p2p_passed_frac:.2f}",
            f"{r.empty.status}/{'resolved' if r.empty.resolved else 'unresolved'}",
            failing,
            f"{r.gold.duration_s + r.empty.duration_s:.1f}",
            verdict,
        )
    return table


def run_task_build(source: str, only: list[str] | None, tests: list[str] | None, as_json: bool) -> int:
    """`rollgym task build`: 0 every row is right; 1 a row needs a fix (shown); 3 a task could not be built or run."""
    from rollgym.envs.swe.authoring import build_report

    need_docker()
    rows = load_swe_tasks(source, only)

    def job() -> int:
        reports = []
        for task in rows:
            report = build_report(task, tests=tests, log=lambda m: typer.echo(m, err=True))
            reports.append(report)
            if as_json:
                typer.echo(report.model_dump_json())
            else:
                print_report(report)
        if any(r.error for r in reports):
            return CANNOT_RUN
        return INVALID if any(r.problems for r in reports) else VALID

    return interruptible(job)


def print_report(report: BuildReport) -> None:
    console = Console(width=200)
    console.print(Text.assemble(("task ", "bold"), (report.instance_id, "bold")))
    console.print(Text(f"  image        {report.image or '-'}"))
    console.print(Text(f"  base_commit  {report.base_commit or '-'}"))
    for problem in report.problems:
        console.print(Text.assemble(("  fix: ", "bold yellow"), problem))
    if report.error:
        console.print(Text.assemble(("  cannot run: ", "bold red"), report.error))
        return
    table = Table(title=f"{report.instance_id}: {len(report.tests)} tests", title_justify="left")
    for col in ("test", "empty patch", "gold patch", "role"):
        table.add_column(col, overflow="fold")
    for t in sorted(
        report.tests, key=lambda t: ROLE_ORDER[t.role]
    ):  # F2P first, then the tests that fail with the gold patch
        table.add_row(Text(t.test), t.empty, t.gold, Text(t.role or "-", style=ROLE_STYLE[t.role]))
    console.print(table)
    console.print(
        f"  {len(report.FAIL_TO_PASS)} FAIL_TO_PASS, {len(report.PASS_TO_PASS)} PASS_TO_PASS; paste into the row:"
    )
    typer.echo(json.dumps(report.snippet()))  # plain and unwrapped: one line, as in a JSONL row


task_app = typer.Typer(help="Authoring SWE tasks", no_args_is_help=True)


def validate(
    tasks: str = typer.Argument(
        "bundled", help="a JSONL file of SWE task rows, 'bundled', or a Harbor task folder (or a folder of them)"
    ),
    workers: int = typer.Option(2, "--workers", "-j", help="tasks validated in parallel"),
    only: list[str] = typer.Option(None, "--only", help="instance ids to validate"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per task instead of the table"),
) -> None:
    """Check SWE tasks: the gold patch must resolve each one and the empty patch must not (Harbor task folders:
    solution/solve.sh must score 1 and doing nothing below 1). Exit 0: all valid;
    1: a task is invalid; 3: a task could not be run (image build, Docker, missing sdist) and none is invalid;
    2: usage error or no Docker engine; 130/143: Ctrl-C/SIGTERM, with every container it started removed."""
    raise typer.Exit(run_validate(tasks, workers, only, as_json))


def task_build(
    tasks: str = typer.Argument(..., help="a JSONL file of SWE task rows (FAIL_TO_PASS may be [])"),
    only: list[str] = typer.Option(None, "--only", help="instance ids to build"),
    tests: list[str] = typer.Option(
        None, "--tests", help="test files or directories to run (default: all that pytest collects in the workdir)"
    ),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per task instead of the tables"),
) -> None:
    """Build each task's image and run its tests with the empty and with the gold patch: prints base_commit, each
    test's outcomes and suggested role, and the FAIL_TO_PASS / PASS_TO_PASS to paste into the row. Exit 0: the row
    is right; 1: something in it to fix (shown); 3: a task could not be built or run; 2: usage, no Docker."""
    raise typer.Exit(run_task_build(tasks, only, tests, as_json))


def register(app: typer.Typer) -> None:
    """Add `rollgym validate` and `rollgym task build` to the CLI."""
    app.command("validate")(validate)
    task_app.command("build")(task_build)
    app.add_typer(task_app, name="task")
