"""A sandbox's prepared state (`SandboxConfig.prepare`) is built once per Docker host and forked for the sandboxes
after it: the first runs the command and commits its container; the rest start from that state without running it,
even when a whole group starts at once; a failed preparation is not saved; another command or image prepares
again."""

from __future__ import annotations

import asyncio
import contextlib
import io
import uuid

import docker
import pytest

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, start_sandbox
from rollgym.envs.sandbox import prepared as prep

pytestmark = pytest.mark.docker


@pytest.fixture
def command():
    """A preparation no other test uses."""
    return f"echo {uuid.uuid4().hex[:8]} > /var/tmp/prepared && sleep 0.3"


@pytest.fixture(autouse=True)
def made():
    """The prepared states a test makes, removed afterwards."""
    keys: list[str] = []
    yield keys
    client = docker.from_env()
    for key in keys:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(prep.tag_of(key), force=True)


def _config(made: list[str], image: str, command: str) -> SandboxConfig:
    config = SandboxConfig(image=image, workdir="/testbed", task_id="prepared", prepare=command)
    made.append(prep.key_of(docker.from_env(), config))
    return config


def test_the_first_sandbox_prepares_and_the_next_start_from_its_state(base_image, command, made):
    config = _config(made, base_image, command)
    with DockerSandbox(config) as first:
        assert first.prepare_result is not None and first.prepare_result.exit_code == 0
        assert first.image == base_image
        token = first.read_file("/var/tmp/prepared").decode().strip()
    with DockerSandbox(config) as second:
        assert second.prepare_result is None and second.image == prep.tag_of(prep.key_of(docker.from_env(), config))
        assert second.read_file("/var/tmp/prepared").decode().strip() == token  # the state, without running it
        assert second.exec("whoami && pwd").output.split() == ["root", "/testbed"]
    other = _config(made, base_image, command + " && true")
    with DockerSandbox(other) as third:  # another command: prepared again
        assert third.prepare_result is not None and third.image == base_image


def test_a_group_started_at_once_prepares_once(base_image, command, made):
    config = _config(made, base_image, command)

    async def group():
        boxes = await asyncio.gather(*(start_sandbox(config) for _ in range(4)))
        try:
            return [(b.prepare_result, b.image) for b in boxes]
        finally:
            await asyncio.gather(*(b.aclose() for b in boxes))

    results = asyncio.run(group())
    ran = [r for r, _ in results if r is not None]
    assert len(ran) == 1 and ran[0].exit_code == 0, results
    assert sum(image.startswith(prep.REPOSITORY) for _, image in results) == 3


def test_a_failed_preparation_is_not_saved_and_a_new_image_prepares_again(base_image, command, made):
    failing = _config(made, base_image, command + " && exit 7")
    for _ in range(2):
        with DockerSandbox(failing) as box:
            assert box.prepare_result is not None and box.prepare_result.exit_code == 7  # every time: nothing saved
    client = docker.from_env()
    tag = f"rollgym/test-prepared-derived:{uuid.uuid4().hex[:8]}"
    client.images.build(
        fileobj=io.BytesIO(f"FROM {base_image}\nLABEL rollgym-test={tag}\n".encode()),
        tag=tag,
        rm=True,
        network_mode="none",
    )
    try:  # a rebuilt image (another id) is prepared again
        assert prep.key_of(client, _config(made, tag, command)) != prep.key_of(client, failing)
    finally:
        client.images.remove(tag)


def test_a_preparation_quicker_than_a_commit_is_run_by_each_sandbox(base_image, command, made):
    quick = _config(made, base_image, command.replace(" && sleep 0.3", ""))
    with DockerSandbox(quick) as first:
        assert first.prepare_result is not None and first.prepare_result.duration_s < prep.WORTH_S
    with DockerSandbox(quick) as second:  # nothing saved: it prepares itself, at once
        assert second.prepare_result is not None and second.image == base_image
    assert prep.find(docker.from_env(), made[-1]) is None


def test_prune_removes_the_prepared_images_no_container_uses(base_image, command, docker2):
    """On the second daemon (no other test prepares there meanwhile): kept while a sandbox runs from it, removed by
    `rollgym sandbox prune --prepared` once none does."""
    from typer.testing import CliRunner

    from rollgym.cli import app

    client = docker.DockerClient(base_url=docker2)
    config = SandboxConfig(image=base_image, workdir="/testbed", task_id="prepared", prepare=command)
    key = prep.key_of(client, config)
    with DockerSandbox(config, client=client) as first:
        assert first.prepare_result is not None and first.prepare_result.exit_code == 0
    tag = prep.tag_of(key)
    with DockerSandbox(config, client=client) as forked:
        assert forked.image == tag
        busy = CliRunner().invoke(app, ["sandbox", "prune", "--prepared", "--docker-host", docker2])
        assert busy.exit_code == 0 and tag not in busy.output and prep.find(client, key) == tag  # in use: kept
    done = CliRunner().invoke(app, ["sandbox", "prune", "--prepared", "--docker-host", docker2])
    assert done.exit_code == 0 and tag in done.output, done.output
    assert prep.find(client, key) is None
