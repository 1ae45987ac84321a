"""Fixtures for rollgym.envs tests: shared sandboxes (the Docker engine, base image and second Docker daemon
fixtures are in tests/conftest.py)."""

from __future__ import annotations

import os

import pytest

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
