"""`rollgym envs`: the catalogue of environment ids, rollgym's own and each installed-or-not suite's."""

from __future__ import annotations

import typer

COLUMNS = ("id", "suite", "package", "extra", "installed")


def list_envs(
    suite: str | None = typer.Option(None, "--suite", help="only this suite's ids (rollgym, reasoning-gym, ...)"),
    installed_only: bool = typer.Option(False, "--installed", help="only the ids whose package is installed"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per id instead of the table"),
) -> None:
    """List every environment id `rg.make` and `rollgym generate --env` take: its suite, the package that provides
    it, the extra that installs it (`pip install 'rollgym[EXTRA]'`) and whether it is installed here."""
    from rollgym.envs.catalogue import catalogue

    entries = [e for e in catalogue() if (suite is None or e.suite == suite) and (e.installed or not installed_only)]
    if suite is not None and not entries:
        known = sorted({e.suite for e in catalogue()})
        typer.echo(f"error: no suite {suite!r}; the catalogue has {', '.join(known)}", err=True)
        raise typer.Exit(2)
    if as_json:
        for entry in entries:
            typer.echo(entry.model_dump_json())
        return
    rows = [(e.id, e.suite, e.package, e.extra or "-", "yes" if e.installed else "no") for e in entries]
    widths = [max(len(str(row[i])) for row in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    for row in [COLUMNS, *rows]:
        typer.echo("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def register(app: typer.Typer) -> None:
    """Add `rollgym envs` to the `rollgym` CLI."""
    app.command("envs")(list_envs)
