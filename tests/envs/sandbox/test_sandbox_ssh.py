"""An ssh:// Docker host (issue 14): the second real dockerd behind a real sshd (`.ci/docker-up --ssh`), reached
through the system ssh client as the Docker SDK does it (`ssh HOST docker system dial-stdio`). Sandboxes spread
over the local daemon and the ssh host, run commands there, and `rollgym sandbox list/prune` see them."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid

import pytest
from support.docker2 import DOCKER2, DOCKER2_SSH, SSH_BIN, start_docker2_ssh
from typer.testing import CliRunner

from rollgym.envs.sandbox import DEFAULT_HOST, SandboxConfig, client_for, hosts, list_containers, start_sandbox

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_ssh(docker2, monkeypatch) -> str:
    if shutil.which("apt-get") is None and not os.path.exists("/usr/sbin/sshd"):
        pytest.skip("an ssh:// Docker host needs openssh-server (apt-get install openssh-server)")
    start_docker2_ssh()
    monkeypatch.setenv("PATH", f"{SSH_BIN}:{os.environ['PATH']}")  # as ~/.ssh/config would for a user
    return DOCKER2_SSH


@pytest.mark.slow
async def test_sandboxes_spread_over_a_local_and_an_ssh_host(base_image, docker_ssh):
    from rollgym.cli import app

    run_id = f"ssh-{uuid.uuid4().hex[:8]}"
    cfg = SandboxConfig(
        image=base_image,
        docker_host=[DEFAULT_HOST, docker_ssh],
        max_per_host=2,
        run_id=run_id,
        task_id="ssh",
        use_runner=False,
    )
    assert client_for(docker_ssh).info()["DockerRootDir"] == "/var/lib/rollgym-docker2"  # over ssh: the 2nd daemon
    made = await asyncio.wait_for(asyncio.gather(*(start_sandbox(cfg) for _ in range(4))), 180)
    try:
        assert sorted(sb.host for sb in made) == sorted([DEFAULT_HOST] * 2 + [docker_ssh] * 2)
        # Seen by the second daemon itself, over its unix socket (not through ssh, not rollgym's counting).
        assert len(list_containers(run_id=run_id, docker_host=DOCKER2)) == 2
        assert len(list_containers(run_id=run_id, docker_host=DEFAULT_HOST)) == 2
        for sb in made:
            assert sb.exec("echo $((6 * 7))").output.strip() == "42"
        listed = CliRunner().invoke(
            app, ["sandbox", "list", "--docker-host", DEFAULT_HOST, "--docker-host", docker_ssh]
        )
        assert listed.exit_code == 0, listed.output
        for sb in made:
            assert any(line.split()[:2] == [sb.name, sb.host] for line in listed.output.splitlines()), listed.output
    finally:
        await asyncio.gather(*(sb.aclose() for sb in made))
    assert hosts.load([DEFAULT_HOST, docker_ssh]) == {DEFAULT_HOST: 0, docker_ssh: 0}
    assert list_containers(run_id=run_id, docker_host=[DEFAULT_HOST, DOCKER2]) == []


def test_an_ssh_host_that_refuses_the_key_is_a_clear_sandbox_error(base_image, docker_ssh):
    from rollgym.envs.sandbox import SandboxError

    with pytest.raises(SandboxError) as caught:
        client_for("ssh://nobody@127.0.0.1:2222", timeout=20).ping()
    said = str(caught.value)
    assert "cannot reach the Docker engine at ssh://nobody@127.0.0.1:2222" in said, said
    assert "ssh -p 2222 nobody@127.0.0.1 docker system dial-stdio" in said, said
