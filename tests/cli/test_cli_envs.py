"""The envs commands of the `rollgym` CLI: validate, sandbox prune/list."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.envs.sandbox import DockerSandbox, SandboxConfig

pytestmark = pytest.mark.docker


def test_validate_prints_a_table_and_exits_zero(base_image):
    res = CliRunner().invoke(app, ["validate", "--only", "parse__fixed-spans", "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "parse__fixed-spans" in res.output and "graded/resolved" in res.output and "graded/unresolved" in res.output


def test_validate_fails_on_a_broken_task(base_image, tmp_path):
    from rollgym.envs.swe import load_bundled_tasks

    task = next(t for t in load_bundled_tasks() if t.instance_id == "parse__fixed-spans")
    broken = task.model_copy(update={"patch": "", "instance_id": "broken"})  # the gold patch does nothing
    path = tmp_path / "tasks.jsonl"
    path.write_text(broken.model_dump_json() + "\n")
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 1 and "FAIL: gold patch not resolved" in res.output


def test_sandbox_list_and_prune_by_run_id(base_image):
    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="cli", run_id="cli-test-run", use_runner=False))
    assert sb.name in CliRunner().invoke(app, ["sandbox", "list"]).output
    res = CliRunner().invoke(app, ["sandbox", "prune", "--run-id", "cli-test-run"])
    assert res.exit_code == 0 and f"removed 1 container(s): {sb.name}" in res.output
    sb.close()


def test_image_build_is_cached_by_content(base_image, tmp_path):
    (tmp_path / "Dockerfile").write_text(f"FROM {base_image}\nRUN echo built > /built.txt\n")
    first = CliRunner().invoke(app, ["image", "build", str(tmp_path), "--repo", "rollgym/test-cli-build"])
    second = CliRunner().invoke(app, ["image", "build", str(tmp_path), "--repo", "rollgym/test-cli-build"])
    assert first.exit_code == 0 and second.exit_code == 0
    tag = first.output.strip().splitlines()[-1]
    assert tag.startswith("rollgym/test-cli-build:") and second.output.strip() == tag
