"""Tasks that name their image in a real registry (Debian's docker-registry on 127.0.0.1:5000, `.ci/docker-up
--registry`): rollgym pulls each image once per Docker host, with progress; an image the registry does not serve is a
per-task `ImageMissingError` (an infrastructure failure) found before any rollout starts, with the registry's answer,
and the rest of the batch goes on (issue 27, item 5)."""

from __future__ import annotations

import asyncio
import uuid

import docker
import pytest
from datasets import Dataset
from support.docker2 import DOCKER2, REGISTRY, start_registry
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.sandbox import client_for
from rollgym.envs.swe.task import TASKS_DIR
from rollgym.envs.swe.task_folders import read_task_folders
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def registry(docker_engine):
    start_registry()
    return REGISTRY


def _probe_rows(tmp_path) -> tuple[list[dict], list[str]]:
    """The task folders' rows as a dataset holds them (no folder: the image by name only), each naming a probe copy
    of its image pushed under a name no other test uses, then removed from this daemon."""
    client = docker.from_env()
    rows, names = [], []
    for row in read_task_folders(TASKS_DIR / "swebench"):
        probe = f"{REGISTRY}/rollgym/registry-probe:{row['instance_id'].lower()}-{uuid.uuid4().hex[:6]}"
        client.images.get(row["image"]).tag(probe)
        for line in client.api.push(probe.rsplit(":", 1)[0], tag=probe.rsplit(":", 1)[1], stream=True, decode=True):
            assert "error" not in line, line
        client.images.remove(probe)
        rows.append({k: v for k, v in row.items() if k != "task_dir"} | {"image": probe})
        names.append(probe)
    return rows, names


def test_images_are_pulled_by_name_once_per_docker_host(registry, docker2, tmp_path):
    from rollgym.envs.swe.images import ensure_task_image
    from rollgym.envs.swe.task import parse_task

    for row in read_task_folders(TASKS_DIR / "swebench"):
        ensure_task_image(parse_task(row), log=lambda _m: None)  # the originals (built from their folders)
    rows, names = _probe_rows(tmp_path)
    parquet = tmp_path / "rows.parquet"
    Dataset.from_list(rows).to_parquet(str(parquet))
    hosts = ["--docker-host", "default", "--docker-host", DOCKER2]
    try:
        first = CliRunner().invoke(app, ["images", "pull", str(parquet), *hosts])
        assert first.exit_code == 0, first.output
        for name in names:
            assert first.output.count(f"[image] pulling {name}") == 2, first.output  # one pull per host
            assert f"[image] pulled {name}" in first.output
            assert f"default: {name}" in first.output and f"{DOCKER2}: {name}" in first.output
            for host in ("default", DOCKER2):
                assert client_for(host).images.get(name)
        again = CliRunner().invoke(app, ["images", "pull", str(parquet), *hosts])
        assert again.exit_code == 0 and "pulling" not in again.output, again.output  # there already: nothing pulled
    finally:
        for host in ("default", DOCKER2):
            for name in names:
                try:
                    client_for(host).images.remove(name)
                except docker.errors.ImageNotFound:
                    pass


def test_an_image_the_registry_does_not_serve_fails_its_tasks_before_any_rollout(registry, tmp_path, tool_tok, say):
    rows, names = _probe_rows(tmp_path)
    good = rows[1]  # the Go task
    missing = {**rows[0], "instance_id": "rollgym__missing-1", "image": f"{REGISTRY}/rollgym/no-such-image:v1"}
    parquet = tmp_path / "rows.parquet"
    Dataset.from_list([missing]).to_parquet(str(parquet))
    pulled = CliRunner().invoke(app, ["images", "pull", str(parquet)])
    assert pulled.exit_code == 3 and "no-such-image:v1" in pulled.output, pulled.output
    assert "manifest unknown" in pulled.output.lower() or "not found" in pulled.output.lower(), pulled.output

    policy = Policy(engine=ScriptedEngine(lambda p, s: say.call("submit")), tokenizer=tool_tok)
    try:
        rollouts = asyncio.run(run_rollouts("rollgym/SWE-v0", [missing, good], policy, n=2, limits=Limits(max_turns=2)))
    finally:
        docker.from_env().images.remove(names[1], force=True)
    lost = [r for r in rollouts if r.task_id == "rollgym__missing-1"]
    ran = [r for r in rollouts if r.task_id == good["instance_id"]]
    assert len(lost) == 2 and all(r.error.category == "sandbox" and r.error.type == "ImageMissingError" for r in lost)
    assert all("no-such-image:v1" in r.error.message and not r.turns for r in lost)
    assert len(ran) == 2 and all(r.error is None and r.turns and r.reward == 0.0 for r in ran)  # graded, unresolved
