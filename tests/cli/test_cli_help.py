"""The command line's help says what it takes: `--env` names its default and the `MODULE:ID` form (rich markup must
not eat the bracketed default)."""

from __future__ import annotations

from typer.testing import CliRunner

from rollgym.cli import app


def test_generate_help_keeps_the_env_default_and_names_the_module_form():
    result = CliRunner().invoke(app, ["generate", "--help"], env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "[default: rollgym/Calculator-v0; with --agent rollgym/SWE-v0]" in text
    assert "MODULE:ID" in text
