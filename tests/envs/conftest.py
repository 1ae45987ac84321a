"""Fixtures for rollgym.envs tests: the container runtimes the sandbox contract is checked on, and shared sandboxes
on each (the Docker engine, base image, second Docker daemon and Podman fixtures are in tests/conftest.py)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: The runtimes every contract test runs on: Docker, and Podman through its Docker-compatible socket (marked `podman`).
RUNTIMES = [pytest.param("docker", id="docker"), pytest.param("podman", id="podman", marks=pytest.mark.podman)]


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime_host(request, base_image) -> str:
    """The daemon address of one runtime: the default Docker engine, or the local Podman's socket."""
    return "default" if request.param == "docker" else request.getfixturevalue("podman_host")


@pytest.fixture(scope="module")
def sandbox(runtime_host, base_image):
    """One shared sandbox (persistent runner) per runtime, for tests that do not break it."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig

    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="shared", mem_limit="512m", docker_host=runtime_host))
    assert sb.uses_runner, sb.runner_error
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def plain_sandbox(runtime_host, base_image):
    """A shared sandbox per runtime that uses plain `docker exec` (no runner)."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig

    sb = DockerSandbox(
        SandboxConfig(image=base_image, task_id="plain", use_runner=False, mem_limit="512m", docker_host=runtime_host)
    )
    yield sb
    sb.close()


@pytest.fixture(params=["runner", "exec"])
def any_sandbox(request, sandbox, plain_sandbox):
    """Each exec behaviour is checked on both paths."""
    return sandbox if request.param == "runner" else plain_sandbox
