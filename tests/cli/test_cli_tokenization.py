"""`rollgym check-template` and `rollgym demo` on the real default model's tokenizer."""

from support import TEMPLATE_DIR
from typer.testing import CliRunner

from rollgym.cli import app

runner = CliRunner()


def test_check_template_certifies_the_default_model():
    result = runner.invoke(app, ["check-template", "smollm2-135m"])
    assert result.exit_code == 0, result.output
    assert "CERTIFIED" in result.output and "user_followup" in result.output


def test_check_template_refuses_a_template_whose_tokens_are_missing():
    result = runner.invoke(
        app, ["check-template", "smollm2-135m", "--chat-template", str(TEMPLATE_DIR / "llama3_1.jinja")]
    )
    assert result.exit_code == 1
    assert "REFUSED" in result.output and "turn_structure" in result.output


def test_check_template_unknown_model_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["check-template", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "cannot load a tokenizer" in result.output


def test_demo_shows_token_exactness():
    result = runner.invoke(app, ["token-demo"])
    assert result.exit_code == 0, result.output
    assert "sampled ids kept verbatim: True" in result.output
    assert "decode + re-render gives the same ids: False" in result.output
