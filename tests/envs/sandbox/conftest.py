"""A second real Docker daemon (`.ci/docker-up --second`: unix:///run/rollgym-docker2.sock, rollgym's base
image copied in), started once per session if it is not running, for the several-Docker-hosts tests."""

from __future__ import annotations

import os
import shutil

import pytest

from docker2_support import DOCKER2, start_docker2


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
