"""The `rollgym` command line (also `python -m rollgym`): one typer app, one module per area of commands."""

from rollgym.cli.app import app, bare_ray_flag, main

__all__ = ["app", "bare_ray_flag", "main"]
