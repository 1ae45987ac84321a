"""`rollgym generate --env-arg KEY=VALUE`: an environment that needs an argument to be made (a verifiers taskset, an
OpenEnv server) runs from the command line; a malformed pair or one given with --agent is refused before any rollout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollgym.cli import app

runner = CliRunner()


def test_a_verifiers_taskset_named_by_env_arg_runs_through_rollgym_generate(tmp_path, monkeypatch):
    pytest.importorskip("verifiers.v1", reason="verifiers is not installed: pip install 'rollgym[verifiers]'")
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "envs" / "suites" / "verifiers"))  # vf_guess.py
    out = tmp_path / "run"
    args = ["generate", "--env", "verifiers/env-v0", "--env-arg", "environment=vf_guess", "--num-tasks", "1"]
    args += ["--n", "1", "--max-turns", "2", "--max-tokens", "16", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert row["env_id"] == "verifiers/env-v0" and row["error"] is None and row["turns"]
    assert [t["function"]["name"] for t in row["tools"]] == ["guess"]  # the taskset's own tool


def test_a_malformed_env_arg_or_one_with_an_agent_is_refused_before_any_rollout(tmp_path):
    bad = runner.invoke(app, ["generate", "--env-arg", "no-equals-sign", "--out", str(tmp_path / "a")])
    assert bad.exit_code != 0 and "--env-arg takes KEY=VALUE" in bad.output
    with_agent = ["generate", "--agent", "mini-swe-agent", "--env-arg", "x=1", "--out", str(tmp_path / "b")]
    refused = runner.invoke(app, with_agent)
    assert refused.exit_code != 0 and "--env-arg is for rollgym's tool loop" in refused.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
