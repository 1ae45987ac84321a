"""Leak prevention across processes (SIGTERM backstop, orphans pruned after SIGKILL), the plain-exec
fallback for images that cannot run the runner, and content-hash image builds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import docker
import pytest

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, build_image, prune

pytestmark = pytest.mark.docker

CHILD = """
import sys, time
from rollgym.envs.sandbox import DockerSandbox, SandboxConfig
sb = DockerSandbox(SandboxConfig(image=sys.argv[1], task_id="child", run_id=sys.argv[2]))
print(sb.name, flush=True)
time.sleep(600)
"""


def _child(base_image: str, run_id: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, base_image, run_id], stdout=subprocess.PIPE, text=True)
    name = proc.stdout.readline().strip()
    assert name.startswith("rollgym-child-")
    return proc, name


def _exists(name: str) -> bool:
    try:
        docker.from_env().containers.get(name)
        return True
    except docker.errors.NotFound:
        return False


def test_sigterm_backstop_removes_the_processes_sandboxes(base_image):
    proc, name = _child(base_image, "lifecycle-term")
    assert _exists(name)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 20
    while _exists(name) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _exists(name)


def test_orphans_of_a_killed_process_are_pruned(base_image):
    proc, name = _child(base_image, "lifecycle-kill")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert _exists(name)  # nothing could clean up: it is an orphan now
    removed = prune()
    assert name in removed and not _exists(name)


@pytest.fixture(scope="module")
def no_python_image(base_image, tmp_path_factory):
    ctx = tmp_path_factory.mktemp("nopy")
    (ctx / "Dockerfile").write_text(f"FROM {base_image}\nRUN rm -f /usr/bin/python3* /usr/local/bin/python\n")
    return build_image(ctx, "rollgym/test-nopython", log=lambda _m: None)


def test_content_hash_builds_are_cached_and_change_with_content(no_python_image, tmp_path, base_image):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {base_image}\nCOPY hello.txt /hello.txt\n")
    (ctx / "hello.txt").write_text("one")
    first = build_image(ctx, "rollgym/test-ctx", log=lambda _m: None)
    start = time.monotonic()
    assert build_image(ctx, "rollgym/test-ctx", log=lambda _m: None) == first
    assert time.monotonic() - start < 2
    (ctx / "hello.txt").write_text("two")
    second = build_image(ctx, "rollgym/test-ctx", log=lambda _m: None)
    assert second != first
    with DockerSandbox(SandboxConfig(image=second, task_id="ctx")) as sb:
        assert sb.read_file("/hello.txt") == b"two"


def test_images_without_python_fall_back_to_plain_exec(no_python_image):
    with DockerSandbox(SandboxConfig(image=no_python_image, task_id="nopy")) as sb:
        assert not sb.uses_runner and sb.runner_error
        res = sb.exec("echo fallback; exit 2")
        assert res.via == "exec" and res.exit_code == 2 and res.output.strip() == "fallback"
        start = time.monotonic()
        assert sb.exec("trap '' TERM; sleep 100", timeout=1).timed_out
        assert time.monotonic() - start < 10


def test_a_stopped_group_closes_its_sandboxes_and_any_created_after(base_image):
    import threading

    from rollgym.envs.sandbox import SandboxDeadError, SandboxGroup

    group, made, errors = SandboxGroup(), [], []
    outsider = DockerSandbox(SandboxConfig(image=base_image, task_id="outsider", use_runner=False))

    def worker() -> None:
        with group.collecting():
            made.append(DockerSandbox(SandboxConfig(image=base_image, task_id="member", use_runner=False)))
            group.stop()  # as the main thread would, on Ctrl-C or SIGTERM
            try:
                DockerSandbox(SandboxConfig(image=base_image, task_id="late", use_runner=False))
            except SandboxDeadError as exc:
                errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert made[0].closed and not _exists(made[0].name)
    assert len(errors) == 1 and "created after its run was stopped" in str(errors[0])
    late = str(errors[0]).split()[1]
    assert late.startswith("rollgym-late-") and not _exists(late)
    assert not outsider.closed and _exists(outsider.name)  # a sandbox of no group is not touched
    outsider.close()
