"""Sandboxes over several Docker hosts (issue 14), on two real daemons (the default engine and a second
dockerd): least-loaded placement under a cap, images provided per host, `sandbox list/prune` across hosts,
and a host killed mid-batch (its sandboxes end as sandbox errors, the others go on, it comes back)."""

from __future__ import annotations

import asyncio
import io
import tarfile
import time
import uuid

import pytest
from support.docker2 import DOCKER2_CERTS, DOCKER2_TLS, kill_docker2, start_docker2
from typer.testing import CliRunner

from rollgym.envs.sandbox import (
    DEFAULT_HOST,
    DockerSandbox,
    HostUnavailableError,
    SandboxConfig,
    SandboxError,
    client_for,
    hosts,
    list_containers,
    prune,
    start_sandbox,
)
from rollgym.envs.sandbox import images as images_mod
from rollgym.envs.sandbox.host_images import copy_image, ensure_image_on, forget
from rollgym.envs.sandbox.images import build_image_from_dockerfile, image_exists

pytestmark = pytest.mark.docker


def _config(base_image: str, docker2: str, run_id: str, **kw) -> SandboxConfig:
    return SandboxConfig(
        image=base_image,
        docker_host=[DEFAULT_HOST, docker2],
        run_id=run_id,
        use_runner=False,
        **{"task_id": "hosts", **kw},
    )


def _label_hosts(docker2: str, run_id: str) -> dict[str, int]:
    """Containers of a run per daemon, from the daemons themselves (not from rollgym's counting)."""
    return {h: len(list_containers(run_id=run_id, docker_host=h)) for h in (DEFAULT_HOST, docker2)}


@pytest.mark.slow
async def test_sandboxes_spread_least_loaded_under_a_cap(base_image, docker2):
    run_id = f"spread-{uuid.uuid4().hex[:8]}"
    cfg = _config(base_image, docker2, run_id, max_per_host=3)
    assert hosts.load([DEFAULT_HOST, docker2]) == {DEFAULT_HOST: 0, docker2: 0}, (
        "sandboxes of other tests are still live"
    )
    made = await asyncio.wait_for(asyncio.gather(*(start_sandbox(cfg) for _ in range(6))), 120)
    try:
        assert sorted(sb.host for sb in made) == sorted([DEFAULT_HOST] * 3 + [docker2] * 3)
        assert _label_hosts(docker2, run_id) == {DEFAULT_HOST: 3, docker2: 3}
        for sb in made:  # each one's own host's client runs its commands, and its label says where it is
            assert sb.container.labels["rollgym.docker_host"] == sb.host
            assert sb.exec("echo ok").output.strip() == "ok"
        seventh = asyncio.create_task(start_sandbox(cfg))
        await asyncio.sleep(1.0)
        assert not seventh.done(), "every host is at its cap of 3: the 7th sandbox must wait for a slot"
        freed = next(sb for sb in made if sb.host == docker2)
        made.remove(freed)
        await freed.aclose()
        late = await asyncio.wait_for(seventh, 60)
        made.append(late)
        assert late.host == docker2, "the slot freed on the second host is where the waiting sandbox goes"
    finally:
        await asyncio.gather(*(sb.aclose() for sb in made))
    assert hosts.load([DEFAULT_HOST, docker2]) == {DEFAULT_HOST: 0, docker2: 0}
    assert _label_hosts(docker2, run_id) == {DEFAULT_HOST: 0, docker2: 0}


def _tiny_image(tag: str) -> None:
    """A one-file image imported on the default daemon (no registry), for a fast copy."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = tag.encode()
        info = tarfile.TarInfo("marker")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repo, version = tag.rsplit(":", 1)
    client_for(DEFAULT_HOST).api.import_image_from_data(buf.getvalue(), repository=repo, tag=version)


def test_images_are_built_or_copied_per_host(base_image, docker2):
    token = uuid.uuid4().hex[:8]
    built, copied = f"rollgym/hosts-test:built-{token}", f"rollgym/hosts-test:copied-{token}"
    try:
        # Built here before: its recipe is known, so the second host builds it from the base image it has.
        build_image_from_dockerfile(f"FROM {base_image}\nRUN echo {token} > /marker\n", built, log=lambda _m: None)
        assert not image_exists(built, client_for(docker2))
        with DockerSandbox(SandboxConfig(image=built, docker_host=docker2, task_id="img", use_runner=False)) as sb:
            assert sb.host == docker2
            assert sb.exec("cat /marker").output.strip() == token
        assert image_exists(built, client_for(docker2))
        # Not built by this process: copied from the host that has it (`docker save` streamed into `docker load`).
        _tiny_image(copied)
        assert copied not in images_mod.RECIPES and not image_exists(copied, client_for(docker2))
        ensure_image_on(copied, docker2, [DEFAULT_HOST])
        assert image_exists(copied, client_for(docker2))
        # Missing everywhere: a clear error naming the hosts.
        with pytest.raises(SandboxError, match="not found on any of the Docker hosts"):
            ensure_image_on(f"rollgym/hosts-test:nowhere-{token}", docker2, [DEFAULT_HOST])
        with pytest.raises(SandboxError, match="copying"):
            copy_image(f"rollgym/hosts-test:nowhere-{token}", DEFAULT_HOST, docker2)
    finally:
        for host in (DEFAULT_HOST, docker2):
            for tag in (built, copied):
                try:
                    client_for(host).images.remove(tag, force=True)
                except Exception:  # noqa: BLE001 - absent already
                    pass
            forget(host)


def test_sandbox_list_and_prune_cover_every_host(base_image, docker2):
    from rollgym.cli import app

    run_id = f"cli-{uuid.uuid4().hex[:8]}"
    both = ["--docker-host", DEFAULT_HOST, "--docker-host", docker2]
    sbs = [
        DockerSandbox(SandboxConfig(image=base_image, docker_host=h, run_id=run_id, task_id="cli", use_runner=False))
        for h in (DEFAULT_HOST, docker2)
    ]
    try:
        listed = CliRunner().invoke(app, ["sandbox", "list", *both])
        assert listed.exit_code == 0, listed.output
        lines = listed.output.splitlines()
        assert lines[0].split()[:3] == ["NAME", "HOST", "STATE"]
        for sb in sbs:
            assert any(line.split()[:2] == [sb.name, sb.host] for line in lines), listed.output
        only_second = CliRunner().invoke(app, ["sandbox", "list", "--docker-host", docker2])
        assert sbs[1].name in only_second.output and sbs[0].name not in only_second.output
        # From the environment when no option is given, as `generate --docker-host` sets it for a run.
        env = {"ROLLGYM_DOCKER_HOSTS": f"{DEFAULT_HOST},{docker2}"}
        assert all(sb.name in CliRunner().invoke(app, ["sandbox", "list"], env=env).output for sb in sbs)
        pruned = CliRunner().invoke(app, ["sandbox", "prune", "--run-id", run_id, *both])
        assert pruned.exit_code == 0 and "removed 2 container(s)" in pruned.output, pruned.output
        assert list_containers(run_id=run_id, docker_host=[DEFAULT_HOST, docker2]) == []
        dead = CliRunner().invoke(app, ["sandbox", "list", "--docker-host", "unix:///run/rollgym-no-such.sock"])
        assert dead.exit_code == 1 and "rollgym-no-such.sock" in dead.output
    finally:
        for sb in sbs:
            sb.close()


@pytest.mark.slow
async def test_a_host_killed_mid_batch_is_taken_out_of_rotation(base_image, docker2, monkeypatch):
    run_id = f"kill-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(hosts, "COOLDOWN_S", 2.0)
    cfg = _config(base_image, docker2, run_id)
    started = asyncio.Event()
    up: list[DockerSandbox] = []

    async def rollout(k: int) -> str:
        """A sandbox-using episode: start, then a few commands; returns the host it ran on."""
        sb = await start_sandbox(cfg.model_copy(update={"task_id": f"r{k}"}))
        up.append(sb)
        try:
            if len(up) == 4:
                started.set()
            for _ in range(4):
                res = await sb.aexec("sleep 0.5; echo step", timeout=30)
                assert res.output.strip() == "step"
            return sb.host
        finally:
            await sb.aclose()

    first = [asyncio.create_task(rollout(k)) for k in range(4)]
    await asyncio.wait_for(started.wait(), 60)
    assert sorted(sb.host for sb in up) == sorted([DEFAULT_HOST] * 2 + [docker2] * 2)
    t0 = time.monotonic()
    kill_docker2()
    try:
        later = [asyncio.create_task(rollout(k)) for k in range(4, 6)]  # start after the kill
        results = await asyncio.wait_for(asyncio.gather(*first, *later, return_exceptions=True), 120)
        elapsed = time.monotonic() - t0
        dead = [r for r in results[:4] if isinstance(r, BaseException)]
        assert len(dead) == 2 and all(isinstance(e, SandboxError) for e in dead), results
        assert [r for r in results[:4] if not isinstance(r, BaseException)] == [DEFAULT_HOST] * 2
        # The later ones: on the live host, or (the one that found the host dead on create) an infra error.
        for r in results[4:]:
            assert r == DEFAULT_HOST or isinstance(r, HostUnavailableError), results
        assert DEFAULT_HOST in results[4:], "after the kill, new sandboxes go to the host that answers"
        assert elapsed < 90, f"the rollouts on the dead host took {elapsed:.0f}s to end"
        assert list_containers(run_id=run_id, docker_host=DEFAULT_HOST) == []
        assert docker2 in hosts.out_of_rotation()
        with pytest.raises(HostUnavailableError, match="rollgym-docker2"):  # only the dead host: said clearly
            DockerSandbox(SandboxConfig(image=base_image, docker_host=docker2, task_id="nohost", use_runner=False))
    finally:
        start_docker2()
    await asyncio.sleep(2.1)  # past the cooldown: probed again, and back in rotation
    back = await start_sandbox(cfg.model_copy(update={"docker_host": [docker2]}))
    try:
        assert back.host == docker2 and back.exec("echo back").output.strip() == "back"
    finally:
        back.close()
    prune(run_id=run_id, docker_host=docker2)  # containers the killed daemon could not remove
    assert list_containers(run_id=run_id, docker_host=[DEFAULT_HOST, docker2]) == []


def test_hosts_from_the_environment(base_image, docker2, monkeypatch):
    """No `docker_host`: `ROLLGYM_DOCKER_HOSTS` (what `generate --docker-host` sets) decides where sandboxes go."""
    from rollgym.envs.sandbox import configured_hosts

    monkeypatch.setenv("ROLLGYM_DOCKER_HOSTS", f" {DEFAULT_HOST}, {docker2},{docker2}")
    assert configured_hosts() == [DEFAULT_HOST, docker2]
    assert configured_hosts("unix:///a.sock,unix:///b.sock") == ["unix:///a.sock", "unix:///b.sock"]
    run_id = f"env-{uuid.uuid4().hex[:8]}"
    sbs = [
        DockerSandbox(SandboxConfig(image=base_image, run_id=run_id, task_id="env", use_runner=False)) for _ in range(2)
    ]
    try:
        assert sorted(sb.host for sb in sbs) == sorted([DEFAULT_HOST, docker2])
    finally:
        for sb in sbs:
            sb.close()
    monkeypatch.delenv("ROLLGYM_DOCKER_HOSTS")
    assert configured_hosts() == [DEFAULT_HOST]


def test_tls_and_ssh_connection_settings(tmp_path, monkeypatch):
    """tcp:// hosts take TLS from DOCKER_TLS_VERIFY / DOCKER_CERT_PATH as the Docker CLI does; ssh:// goes
    through the system ssh client; unix:// needs neither."""
    from rollgym.envs.sandbox.daemon import _client_kwargs

    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-")
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))
    tcp = _client_kwargs("tcp://10.0.0.7:2376")
    assert tcp["base_url"] == "tcp://10.0.0.7:2376" and tcp["tls"].verify is True
    assert tcp["tls"].ca_cert == str(tmp_path / "ca.pem")
    assert tcp["tls"].cert == (str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
    assert _client_kwargs("ssh://rl@gpu-7") == {"base_url": "ssh://rl@gpu-7", "use_ssh_client": True}
    assert _client_kwargs("unix:///run/rollgym-docker2.sock") == {"base_url": "unix:///run/rollgym-docker2.sock"}
    monkeypatch.delenv("DOCKER_TLS_VERIFY")
    monkeypatch.delenv("DOCKER_CERT_PATH")
    assert "tls" not in _client_kwargs("tcp://10.0.0.7:2375")


def test_a_tls_host(base_image, docker2, monkeypatch):
    """The second daemon also listens on TCP with TLS and client certificates: with DOCKER_TLS_VERIFY and
    DOCKER_CERT_PATH a sandbox runs there (runner included); without the certificates the daemon refuses."""
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", DOCKER2_CERTS)
    with DockerSandbox(SandboxConfig(image=base_image, docker_host=DOCKER2_TLS, task_id="tls")) as sb:
        assert sb.host == DOCKER2_TLS and sb.exec("echo over-tls").output.strip() == "over-tls"
        assert sb.uses_runner, sb.runner_error
        assert sb.name in list_containers(docker_host=docker2)  # the same daemon, seen over its unix socket
    monkeypatch.delenv("DOCKER_TLS_VERIFY")
    monkeypatch.delenv("DOCKER_CERT_PATH")
    with pytest.raises(SandboxError, match="cannot reach the Docker engine at tcp://127.0.0.1:23760"):
        client_for(DOCKER2_TLS, timeout=7)  # a new client (another timeout): plain HTTP to a TLS port
