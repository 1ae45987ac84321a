"""Leases (envs/sandbox/lease.py): a sandbox lives while its owner renews it, through a command many leases long, and
ends itself once its owner falls silent, on each runtime; owners that die without running any code (SIGKILL, the OOM
killer) and an owner stopped with SIGSTOP (the documented choice) lose their sandboxes within lease + 30 s with
nothing else run, each ended by its own PID 1 (exit 3), while another owner's sandbox on the same daemon runs on."""

from __future__ import annotations

import os
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.lease import LAPSED, DeathWatch, seconds_until_gone, start_owner
from support.oom import MemoryCage

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, configured_hosts
from rollgym.envs.sandbox.errors import UnsupportedRuntimeError
from rollgym.envs.sandbox.host_listing import list_hosts, table
from rollgym.envs.sandbox.lease import KEEPER, LEASE_ENV, lease_seconds
from rollgym.envs.sandbox.lifecycle import HOST
from rollgym.errors import UsageError

#: The owners' lease in these tests: short, so a death is cleaned in seconds.
OWNER_LEASE_S = 5.0
#: What the issue allows from a death to the last container gone.
BOUND_S = OWNER_LEASE_S + 30


def test_leases_and_runtimes_are_checked_before_any_container(monkeypatch):
    with pytest.raises(UsageError, match="at least 1 s"):
        SandboxConfig(image="x", lease_s=0.5)
    monkeypatch.setenv(LEASE_ENV, "soon")
    with pytest.raises(UsageError, match=LEASE_ENV):
        lease_seconds(None)
    monkeypatch.setenv(LEASE_ENV, "0")
    assert lease_seconds(None) == 0.0 and lease_seconds(12) == 12
    monkeypatch.delenv(LEASE_ENV)
    assert lease_seconds(None) == 60.0
    for runtime in ("apptainer", "kubernetes", "rkt"):
        with pytest.raises(UsageError, match="runs sandboxes on docker and podman"):
            SandboxConfig(image="x", runtime=runtime)
    for address in ("k8s://cluster.local", "apptainer://", "kubernetes"):
        with pytest.raises(UnsupportedRuntimeError, match="docker and podman"):
            configured_hosts(address)
    assert SandboxConfig(image="x", runtime="Podman").runtime == "podman"


@pytest.mark.docker
def test_renewals_outlast_a_long_command_and_a_silent_owner_loses_its_sandboxes(base_image, runtime_host):
    """Lease 3 s; a 7 s command on each exec path (the runner's socket, and plain exec renewed through the daemon)
    finishes; `sandbox list` shows this process as owner and a fresh lease; once renewals stop, both end by themselves."""
    run_id = f"lease-{uuid.uuid4().hex[:8]}"
    with DeathWatch(run_id, runtime_host) as watch:
        sbs = [
            DockerSandbox(
                SandboxConfig(
                    image=base_image,
                    task_id="lease",
                    run_id=run_id,
                    lease_s=3,
                    use_runner=runner,
                    docker_host=runtime_host,
                )
            )
            for runner in (True, False)
        ]
        try:
            assert sbs[0].uses_runner and not sbs[1].uses_runner
            with ThreadPoolExecutor(2) as pool:
                results = list(pool.map(lambda sb: sb.exec("sleep 7; echo slept", timeout=60), sbs))
            assert [r.output.strip() for r in results] == ["slept", "slept"], results
            rows, failed = list_hosts(run_id, runtime_host, lease_ages=True)
            assert not failed and {r.name for r in rows} == {sb.name for sb in sbs}
            for row in rows:
                assert row.owner == f"{HOST}:{os.getpid()}" and row.lease_s == 3
                assert row.lease_age_s is not None and row.lease_age_s <= 3, row
            assert table(rows).splitlines()[0].split() == ["NAME", "HOST", "STATE", "OWNER", "LEASE", "RUN", "TASK"]
            for sb in sbs:
                KEEPER.drop(sb)  # the owner falls silent (it stays alive)
            gone_after = seconds_until_gone({sb.name for sb in sbs}, runtime_host, timeout_s=30)
            assert gone_after < 3 + 5, f"still there {gone_after:.1f} s after renewals stopped"
            _wait_for_exits(watch, {sb.name for sb in sbs})
            assert {sb.name: watch.exits.get(sb.name) for sb in sbs} == {sb.name: LAPSED for sb in sbs}
        finally:
            for sb in sbs:
                sb.close()


def _wait_for_exits(watch: DeathWatch, names: set[str]) -> None:
    deadline = time.monotonic() + 10
    while not names <= set(watch.exits) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.docker
def test_owners_killed_or_stopped_lose_their_sandboxes_and_no_one_elses(base_image):
    """SIGKILL (no code runs) and SIGSTOP (alive, but silent) to two owners of two sandboxes each: all four end by
    their own lease within lease + 30 s, nothing else run; this process's sandbox on the same daemon is untouched."""
    run_id = f"deaths-{uuid.uuid4().hex[:8]}"
    bystander = DockerSandbox(SandboxConfig(image=base_image, task_id="bystander", use_runner=False))
    owners = {}
    try:
        with DeathWatch(run_id) as watch:
            owners = {sig: start_owner(base_image, run_id, OWNER_LEASE_S) for sig in (signal.SIGKILL, signal.SIGSTOP)}
            start = time.monotonic()
            for sig, (proc, _) in owners.items():
                os.kill(proc.pid, sig)
            left = {sig: set(names) for sig, (_, names) in owners.items()}
            cleaned: dict[signal.Signals, float] = {}
            while left.keys() - cleaned.keys() and time.monotonic() - start < BOUND_S:
                listed = {row.name for row in list_hosts(run_id)[0]}
                cleaned.update({sig: time.monotonic() - start for sig, names in left.items() if not names & listed})
                time.sleep(0.2)
            print({sig.name: f"{seconds:.1f} s" for sig, seconds in cleaned.items()})  # the fault table's figures
            assert cleaned.keys() == left.keys(), f"left after {BOUND_S:.0f} s: {left}"
            names = set().union(*left.values())
            _wait_for_exits(watch, names)
            assert {watch.exits.get(n) for n in names} == {LAPSED}, watch.exits  # each ended by its own PID 1
        assert bystander.status() == "running" and bystander.exec("echo here").output.strip() == "here"
    finally:
        for proc, _ in owners.values():
            proc.kill()  # SIGKILL ends a stopped process too
            proc.wait(timeout=30)
        bystander.close()


@pytest.mark.docker
def test_an_owner_the_oom_killer_ends_loses_its_sandboxes(base_image):
    """The owner runs in a memory cgroup of 256 MiB and allocates until the kernel's OOM killer ends it: nothing of
    rollgym runs after that, and both its sandboxes end by their own lease within lease + 30 s."""
    cage = MemoryCage.make(256 << 20)
    if isinstance(cage, str):
        pytest.skip(cage)
    run_id = f"oom-{uuid.uuid4().hex[:8]}"
    try:
        with DeathWatch(run_id) as watch:
            proc, names = start_owner(base_image, run_id, OWNER_LEASE_S)
            cage.add(proc.pid)
            assert proc.stdin is not None
            proc.stdin.write("eat\n")
            proc.stdin.flush()
            assert proc.wait(timeout=60) == -signal.SIGKILL
            assert cage.oom_kills() >= 1  # the kernel's OOM killer, not anyone else, ended it
            seconds = seconds_until_gone(set(names), timeout_s=BOUND_S)
            print(f"OOM-killed owner: its sandboxes gone {seconds:.1f} s after its death")  # the fault table's figure
            assert seconds < BOUND_S
            _wait_for_exits(watch, set(names))
            assert {watch.exits.get(n) for n in names} == {LAPSED}, watch.exits
    finally:
        cage.remove()
