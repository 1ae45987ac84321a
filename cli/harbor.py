"""`rollgym validate PATH` on Harbor task folders (the same verdicts, exit codes and `--json` as for SWE tasks), and
`rollgym images build PATH`: their images built ahead of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rollgym.envs.harbor.oracle import HarborValidationRow


def run_validate_harbor(source: str, workers: int, only: list[str] | None, as_json: bool) -> int:
    """Validate the Harbor task folders at `source`: 0 all valid; 1 some invalid; 3 some could not be run."""
    from rollgym.cli.swe import USAGE, interruptible, need_docker, report_verdicts
    from rollgym.envs.harbor.folders import harbor_rows
    from rollgym.envs.harbor.oracle import validate_harbor_tasks

    need_docker()
    rows = harbor_rows(source) or []
    if only:
        unknown = sorted(set(only) - {r["task_id"] for r in rows})
        if unknown:
            typer.echo(f"error: no task {', '.join(unknown)} in {source}", err=True)
            raise typer.Exit(USAGE)
        rows = [r for r in rows if r["task_id"] in set(only)]

    def job() -> int:
        results = validate_harbor_tasks(rows, workers=workers, log=lambda m: typer.echo(m, err=True))
        return report_verdicts(results, as_json, harbor_table)

    return interruptible(job)


def harbor_table(results: list[HarborValidationRow]) -> Table:
    from rollgym.cli.swe import VERDICT_STYLE, VERDICT_TEXT

    table = Table(title=f"rollgym validate: {len(results)} Harbor task(s)")
    for col in ("task", "solution", "nothing done", "time (s)", "verdict"):
        table.add_column(col, overflow="fold")
    for r in results:
        verdict = Text(VERDICT_TEXT[r.verdict] + r.problem, style=VERDICT_STYLE[r.verdict])
        if r.gold is None or r.empty is None:
            table.add_row(r.instance_id, "-", "-", "-", verdict)
            continue
        shown = [f"{g.status} {g.reward:g}" if g.reward is not None else g.status for g in (r.gold, r.empty)]
        table.add_row(r.instance_id, *shown, f"{r.gold.duration_s + r.empty.duration_s:.1f}", verdict)
    return table


def build_harbor_images(source: str) -> int:
    """Build (or find, or pull) each task's image, one line per task as it goes: 0 all there, 3 one could not be."""
    from rollgym.cli.swe import CANNOT_RUN, VALID, need_docker
    from rollgym.envs.harbor.folders import harbor_rows, parse_harbor_task
    from rollgym.envs.harbor.images import ensure_harbor_image
    from rollgym.errors import RollgymError

    need_docker()
    rows = harbor_rows(source) or []
    failed = 0
    for i, row in enumerate(rows, 1):
        try:
            image = ensure_harbor_image(parse_harbor_task(row), log=lambda m: typer.echo(m, err=True))
            typer.echo(f"[{i}/{len(rows)}] {row['task_id']}: {image}")
        except RollgymError as exc:
            failed += 1
            typer.echo(f"[{i}/{len(rows)}] {row['task_id']}: FAILED: {exc}")
    return CANNOT_RUN if failed else VALID
