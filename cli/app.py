"""The `rollgym` typer app: the root command and `version`; every other command lives in a module of its area
(`tokens`, `demo`, `generate`, `view`, `engines`, `catalogue`, `proxy`, `sandbox`, `swe`) that adds itself with `register`."""

from __future__ import annotations

import os
import sys

import typer

from rollgym.cli import catalogue, demo, engines, generate, proxy, sandbox, swe, tokens, view

os.environ.setdefault("HF_HUB_OFFLINE", "1")

app = typer.Typer(
    help="rollgym: token-exact rollouts for RL on LLM agents", no_args_is_help=True, pretty_exceptions_enable=False
)


@app.callback()
def _root() -> None:
    """rollgym: token-exact rollouts for RL on LLM agents."""


@app.command()
def version() -> None:
    """Print rollgym's version."""
    from rollgym.version import __version__

    typer.echo(__version__)


for _area in (tokens, demo, view, engines, catalogue, sandbox, swe, generate, proxy):
    _area.register(app)


def bare_ray_flag(argv: list[str]) -> list[str]:
    """`--ray` given without an address (last, or followed by another option) means a local Ray instance."""
    out = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append("local")
    return out


def main() -> None:
    """The `rollgym` console script."""
    sys.argv[1:] = bare_ray_flag(sys.argv[1:])
    app()


if __name__ == "__main__":
    main()
