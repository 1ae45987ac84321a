"""`rollgym view`: write (and optionally serve) a run's token-level trajectory viewer."""

from __future__ import annotations

import typer

from rollgym.errors import RollgymError


def view(
    source: str = typer.Argument(
        ..., help="a run directory, a rollouts .jsonl, a proxy session .json, or a session URL"
    ),
    out: str | None = typer.Option(
        None, "--out", "-o", help="the HTML file to write (default: view.html beside the rollouts)"
    ),
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="model spec or directory for token texts (default: the rollouts' own model)"
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="ROLLGYM_PROXY_API_KEY", help="the proxy's --api-key, for a session URL"
    ),
    split: bool | None = typer.Option(
        None,
        "--split/--single-file",
        help="data in chunk files beside the page, or all in the page (default: split above 2,000 rollouts)",
    ),
    serve: bool = typer.Option(False, "--serve", help="serve the page over HTTP after writing it"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to serve on (loopback by default)"),
    port: int = typer.Option(8765, "--port"),
) -> None:
    """Write a run's token-level trajectory viewer: one self-contained HTML file that opens offline."""
    from rollgym.view import serve_viewer, write_viewer

    try:
        path = write_viewer(
            source, out, tokenizer=tokenizer, api_key=api_key, split=split, log=lambda m: typer.echo(m, err=True)
        )
    except RollgymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    files = path.with_name(path.stem + "_files")
    typer.echo(
        f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB"
        + (f", data in {files}/" if files.is_dir() else "")
        + "): open it in a browser"
    )
    if serve:
        typer.echo(f"serving it at http://{host}:{port}/ (Ctrl-C to stop)")
        serve_viewer(path, host=host, port=port)


def register(app: typer.Typer) -> None:
    """Add `rollgym view` to the CLI."""
    app.command("view")(view)
