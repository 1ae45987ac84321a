"""Sandbox safety: creation defaults, resource limits, no network, dead containers, TTL, close, prune. The limits, the
locked-down defaults and the dead-container errors are checked on each runtime (`runtime_host`: Docker and Podman)."""

from __future__ import annotations

import time

import docker
import pytest

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, SandboxDeadError, client_for, prune
from rollgym.envs.sandbox.lifecycle import HOST, is_orphan

pytestmark = pytest.mark.docker


def test_containers_are_created_locked_down_and_labelled(sandbox):
    attrs = sandbox.client.api.inspect_container(sandbox.container.id)
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none" and not host.get("Init")  # PID 1 is rollgym's keep-alive, which reaps
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["CapDrop"] == ["ALL"] or sandbox.runtime.name == "podman"  # Podman lists each capability it drops
    inside = sandbox.exec("grep -E '^Cap(Eff|Bnd)' /proc/1/status; cat /proc/1/uid_map").output.split()
    assert inside[1] == inside[3] == "0000000000000000"  # no capability left, in the bounding set either
    assert inside[4:7] == ["0", "0", "4294967295"]  # no user namespace: uid 0 inside is uid 0 outside (both rootful)
    assert host["PidsLimit"] == 512 and host["Memory"] == 512 * 1024**2 and host["MemorySwap"] == host["Memory"]
    assert host["NanoCpus"] == 1_000_000_000
    labels = attrs["Config"]["Labels"]
    assert labels["rollgym"] == "1" and labels["rollgym.task_id"] == "shared" and labels["rollgym.run_id"]
    assert "sigtimedwait" in attrs["Config"]["Cmd"][-1]
    assert sandbox.exec("cat /proc/1/cmdline | tr '\\0' ' '").output.startswith("python3 -c")
    assert attrs["Name"].lstrip("/") == sandbox.name and sandbox.name.startswith("rollgym-shared-")


def _require_pids_limit(host: str = "default") -> None:
    if not client_for(host).info().get("PidsLimit"):
        pytest.skip("this engine cannot limit pids: a fork bomb would reach the host")


@pytest.mark.slow
def test_fork_bomb_is_contained(base_image):
    _require_pids_limit()
    with DockerSandbox(SandboxConfig(image=base_image, task_id="forkbomb", pids_limit=64)) as sb:
        # Either the shell spins until the timeout kills its session, or it dies failing to fork and the
        # runner ends its session because the sandbox is at its process limit.
        res = sb.exec("bomb() { bomb | bomb & }; bomb; while :; do :; done", timeout=5)
        assert res.timed_out or "process limit" in res.output, res
        after = sb.exec("echo alive; ps -e --no-headers | wc -l", timeout=30)
        lines = after.output.strip().split("\n")
        assert lines[-2] == "alive" and int(lines[-1]) < 10, after.output


def test_exhausted_process_table_is_cleared_for_the_next_command(base_image, runtime_host):
    _require_pids_limit(runtime_host)
    with DockerSandbox(SandboxConfig(image=base_image, task_id="pids", pids_limit=40, docker_host=runtime_host)) as sb:
        first = sb.exec("for i in $(seq 60); do sleep 1000 & done; echo started", timeout=20)  # fills the table
        after = sb.exec("echo alive; ps -e --no-headers | wc -l", timeout=30)
        assert "process limit" in first.output + after.output and after.exit_code == 0
        assert after.output.strip().split("\n")[-2:][0] == "alive" and int(after.output.strip().split("\n")[-1]) < 10


def _allocation_beyond_limit_mb(limit_mb: int, host: str = "default") -> int:
    """How much to allocate to exceed the limit for sure: without swap accounting, swap adds room."""
    info = client_for(host).info()
    swap_kb = sum(int(line.split()[2]) for line in open("/proc/swaps").read().splitlines()[1:])
    if info.get("SwapLimit") or swap_kb == 0:
        return limit_mb * 3
    needed = limit_mb + swap_kb // 1024 + 256
    if needed > 8192:
        pytest.skip(f"no swap accounting and {swap_kb // 1024} MB of host swap: cannot exceed the limit safely")
    return needed


def test_memory_limit_is_enforced(base_image, runtime_host):
    alloc = _allocation_beyond_limit_mb(128, runtime_host)
    with DockerSandbox(
        SandboxConfig(image=base_image, task_id="oom", mem_limit="128m", docker_host=runtime_host)
    ) as sb:
        res = sb.exec(f"python3 -c 'a = bytearray({alloc} * 1024 * 1024); print(\"allocated\")'", timeout=120)
        assert res.exit_code == 137 and "allocated" not in res.output
        assert sb.exec("echo still-here").output.strip() == "still-here"


def test_no_network_the_host_is_unreachable(sandbox):
    gateway = (docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"] or [{}])[0].get(
        "Gateway"
    ) or "172.17.0.1"
    probe = (
        f"import socket\ntry:\n socket.create_connection(('{gateway}', 2375), timeout=3); print('CONNECTED')\n"
        "except OSError as e:\n print('unreachable', e)"
    )
    sandbox.write_file("/tmp/probe.py", probe)
    res = sandbox.exec("python3 /tmp/probe.py; ls /sys/class/net")
    assert "unreachable" in res.output and "CONNECTED" not in res.output
    assert res.output.split()[-1] == "lo"


@pytest.mark.parametrize("use_runner", [True, False])
def test_container_killed_mid_episode_gives_a_clear_error(base_image, runtime_host, use_runner):
    sb = DockerSandbox(
        SandboxConfig(image=base_image, task_id="killed", use_runner=use_runner, docker_host=runtime_host)
    )
    try:
        assert sb.exec("echo up").output.strip() == "up"
        sb.container.kill()
        start = time.monotonic()
        with pytest.raises(SandboxDeadError, match="no longer running"):
            sb.exec("echo hello", timeout=30)
        assert time.monotonic() - start < 20
    finally:
        sb.close()
        sb.close()  # idempotent
    with pytest.raises(SandboxDeadError, match="closed"):
        sb.exec("true")


def test_read_only_root_with_writable_tmpfs_and_non_root_user(base_image, runtime_host):
    cfg = SandboxConfig(image=base_image, task_id="ro", read_only=True, user="1000:1000", docker_host=runtime_host)
    with DockerSandbox(cfg) as sb:
        res = sb.exec("id -u; touch /etc/x 2>&1; touch /tmp/ok && echo tmp-writable")
        assert res.output.split("\n")[0] == "1000"
        assert "Read-only file system" in res.output and "tmp-writable" in res.output
        sb.write_file("/tmp/sub/data.bin", b"\x00\x01")
        assert sb.read_file("/tmp/sub/data.bin") == b"\x00\x01"


def test_ttl_keepalive_ends_the_container(base_image):
    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="ttl", ttl_s=2, use_runner=False))
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and sb.status().startswith("running"):
            time.sleep(0.5)
        assert not sb.status().startswith("running")
    finally:
        sb.close()


def test_prune_removes_containers_by_label(base_image):
    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="prune", run_id="prune-test-run", use_runner=False))
    removed = prune(run_id="prune-test-run")
    assert removed == [sb.name]
    assert sb.status() == "gone"
    sb.close()  # closing after an external removal is fine


def test_orphan_rule():
    now = time.time()
    assert is_orphan({"rollgym.expires": str(now - 1), "rollgym.host": "elsewhere"}, now)
    assert is_orphan({"rollgym.expires": str(now + 99), "rollgym.host": HOST, "rollgym.pid": "999999999"}, now)
    import os

    assert not is_orphan({"rollgym.expires": str(now + 99), "rollgym.host": HOST, "rollgym.pid": str(os.getpid())}, now)
    assert not is_orphan({"rollgym.expires": str(now + 99), "rollgym.host": "elsewhere", "rollgym.pid": "1"}, now)


async def test_aclose_survives_cancellation(base_image):
    import asyncio

    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="cancel", use_runner=False))
    task = asyncio.ensure_future(sb.aclose())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if sb.status() == "gone":
            break
        await asyncio.sleep(0.1)
    assert sb.closed and sb.status() == "gone"


def test_a_killed_runner_is_reported_then_restarted_never_rerunning_a_command(base_image):
    import threading

    with DockerSandbox(SandboxConfig(image=base_image, task_id="runner-kill")) as sb:
        assert sb.uses_runner
        killer = threading.Timer(1.0, lambda: sb.container.exec_run(["pkill", "-9", "-f", "python3 -u -c"]))
        killer.start()
        res = sb.exec("echo ran >> /tmp/count; sleep 30", timeout=60)
        killer.join()
        assert "lost track of this command" in res.output and res.exit_code is None
        again = sb.exec("cat /tmp/count")
        assert again.output.strip() == "ran" and again.via == "runner"  # a fresh runner; no second run


def test_an_agent_killing_every_process_it_can_does_not_kill_the_sandbox(base_image, runtime_host):
    """Issue 17, item 8: `kill -9 -1` ends the agent's commands (and the runner, which restarts), not PID 1."""
    with DockerSandbox(SandboxConfig(image=base_image, task_id="killall", docker_host=runtime_host)) as sb:
        sb.exec("sleep 1000 & kill -9 -1", timeout=10)
        assert sb.status().startswith("running")
        assert sb.exec("echo back").output.strip() == "back"
        assert sb.exec("ps -eo args | grep -c '^sleep 1000' || true").output.strip() == "0"


def test_orphans_are_reaped_by_pid_1(base_image):
    with DockerSandbox(SandboxConfig(image=base_image, task_id="reap")) as sb:
        sb.exec("for i in 1 2 3 4 5; do (sleep 0.1 &) ; done; sleep 1")
        time.sleep(1)
        assert sb.exec("ps -eo stat | grep -c '^Z' || true").output.strip() == "0"
