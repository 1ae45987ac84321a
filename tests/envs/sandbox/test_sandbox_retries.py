"""Daemon error classification and retries with backoff (no daemon needed: real docker-py exception types)."""

from __future__ import annotations

import docker.errors
import pytest
import requests

from rollgym.envs.sandbox import SandboxDeadError, SandboxError
from rollgym.envs.sandbox.daemon import is_transient, with_retries


def api_error(status: int, message: str = "boom") -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(message, response=response, explanation=message)


def flaky(errors: list[BaseException], value: str = "ok"):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return value

    return fn, calls


def test_transient_errors_are_retried_until_success():
    fn, calls = flaky([api_error(500), api_error(409, "Conflict"), requests.exceptions.ConnectionError("reset")])
    assert with_retries(fn, "op", attempts=4, base_delay_s=0.001) == "ok" and len(calls) == 4


def test_persistent_transient_errors_end_as_sandbox_errors():
    fn, calls = flaky([api_error(503)] * 5)
    with pytest.raises(SandboxError, match="op: Docker daemon error"):
        with_retries(fn, "op", attempts=3, base_delay_s=0.001)
    assert len(calls) == 3


def test_stopped_or_missing_containers_are_not_retried():
    fn, calls = flaky([api_error(409, "Container abc is not running")])
    with pytest.raises(SandboxDeadError, match="not running"):
        with_retries(fn, "exec", base_delay_s=0.001)
    assert len(calls) == 1
    fn, calls = flaky([docker.errors.NotFound("No such container: abc")])
    with pytest.raises(SandboxDeadError):
        with_retries(fn, "exec", base_delay_s=0.001)


def test_client_errors_are_not_retried():
    assert not is_transient(api_error(400, "bad parameter"))
    assert not is_transient(docker.errors.ImageNotFound("No such image"))
    fn, calls = flaky([api_error(400, "bad parameter")])
    with pytest.raises(SandboxError):
        with_retries(fn, "create", base_delay_s=0.001)
    assert len(calls) == 1


def test_an_unreachable_daemon_is_a_sandbox_error_not_an_environment_bug(tmp_path, monkeypatch):
    """Translated at the boundary, so the loop files it under `sandbox` by isinstance."""
    from rollgym.envs.sandbox import daemon
    from rollgym.envs.sandbox.images import image_exists

    monkeypatch.setattr(daemon, "_CLIENTS", {})  # no cached client; restored after the test
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(SandboxError, match="cannot reach the Docker engine"):
        image_exists("rollgym/base:x")
    with pytest.raises(SandboxError, match="no-daemon-either.sock"):  # a named host: the message names it
        daemon.client_for(f"unix://{tmp_path}/no-daemon-either.sock")
