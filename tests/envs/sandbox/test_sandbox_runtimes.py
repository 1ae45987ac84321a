"""Choosing the runtime (envs/sandbox/runtime.py): `runtime="podman"` with no address is the local Podman, the
runtime a daemon serves is detected and checked against the config, and a machine with no Docker socket falls back
to Podman's as its default engine."""

from __future__ import annotations

import pytest

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, configured_hosts, runtime
from rollgym.errors import UsageError

pytestmark = [pytest.mark.docker, pytest.mark.podman]


def test_the_runtime_a_config_names_is_where_it_runs_or_it_says_what_it_found(base_image, podman_host, monkeypatch):
    assert configured_hosts("podman") == configured_hosts(None, "podman") == [podman_host]
    with DockerSandbox(SandboxConfig(image=base_image, task_id="rt", runtime="podman", use_runner=False)) as sb:
        assert sb.host == podman_host and sb.runtime is not None and sb.runtime.name == "podman"
        assert not sb.runtime.rootless and sb.exec("echo on-podman").output.strip() == "on-podman"
    with pytest.raises(UsageError, match="asks for podman, but the daemon at default is docker"):
        DockerSandbox(SandboxConfig(image=base_image, task_id="rt", runtime="podman", docker_host="default"))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(runtime, "DOCKER_SOCKET", "/nonexistent/docker.sock")  # a machine without Docker
    assert runtime.default_base_url() == podman_host
