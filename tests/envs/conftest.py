"""Fixtures for rollgym.envs tests: shared sandboxes and a second real Docker daemon (the Docker engine and
base image fixtures are in tests/conftest.py)."""

from __future__ import annotations

import os
import shutil

import pytest
from docker2_support import DOCKER2, start_docker2

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def sandbox(base_image):
    """One shared sandbox (persistent runner) for tests that do not break it."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig

    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="shared", mem_limit="512m"))
    assert sb.uses_runner, sb.runner_error
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def plain_sandbox(base_image):
    """A shared sandbox that uses plain `docker exec` (no runner)."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig

    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="plain", use_runner=False, mem_limit="512m"))
    yield sb
    sb.close()


@pytest.fixture(params=["runner", "exec"])
def any_sandbox(request, sandbox, plain_sandbox):
    """Each exec behaviour is checked on both paths."""
    return sandbox if request.param == "runner" else plain_sandbox


@pytest.fixture(scope="session")
def docker2(base_image) -> str:
    """The second daemon's address; its rollgym containers of this session are checked for leaks at the end."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.skip("a second dockerd needs root and dockerd installed")
    start_docker2()
    yield DOCKER2
    from rollgym.envs.sandbox import RUN_ID, list_containers, prune

    start_docker2()  # a test that stopped it may have left it down
    left = list_containers(run_id=RUN_ID, docker_host=DOCKER2)
    prune(run_id=RUN_ID, docker_host=DOCKER2)
    assert not left, f"the test session leaked containers on the second daemon: {left}"
