"""SWE grading on Podman (issue 32, item 4): the task image built offline for Docker, copied in (`.ci/docker-up
--podman`: docker save | podman load), grades the gold patch resolved and the empty patch not, in a grading sandbox
on Podman, with the same verdict and test outcomes as on Docker. The long SWE tests run on Docker only."""

from __future__ import annotations

import pytest
from support.lease import DeathWatch
from support.swe import bundled

from rollgym.envs.sandbox import RUN_ID
from rollgym.envs.swe import ensure_task_image
from rollgym.envs.swe.grading import grade_patch

pytestmark = [pytest.mark.docker, pytest.mark.podman]


def test_grading_on_podman_gives_docker_s_verdict(podman_host):
    task = bundled()
    ensure_task_image(task, log=lambda _m: None)  # on Docker, as `rollgym image bootstrap` builds it
    with DeathWatch(RUN_ID, podman_host) as watch:
        gold = grade_patch(task, task.patch, docker_host=podman_host)
        empty = grade_patch(task, "", docker_host=podman_host)
    assert gold.status == "graded" and gold.resolved, gold.log_tail
    assert empty.status == "graded" and not empty.resolved
    assert any(name.startswith(f"rollgym-grade-{task.instance_id}") for name in watch.exits)  # graded on Podman
    on_docker = grade_patch(task, task.patch)
    assert (on_docker.resolved, on_docker.f2p, on_docker.p2p) == (gold.resolved, gold.f2p, gold.p2p)
