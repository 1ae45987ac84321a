"""A SWE episode on a second Docker host (issue 14): its sandbox and its grading run there, the task image
built there from the recipe this process used on the first host, and the fix is rewarded as on one host."""

from __future__ import annotations

import json
import time

import gymnasium
import pytest

import rollgym.envs  # noqa: F401 - registers rollgym/SWE-v0
from rollgym.envs.sandbox import DEFAULT_HOST, client_for, list_containers
from rollgym.envs.sandbox.host_images import forget
from rollgym.envs.sandbox.images import image_exists
from rollgym.envs.swe import ensure_task_image, load_bundled_tasks

pytestmark = pytest.mark.docker

TASK = "inflection__ordinal-teens"


def _call(name: str, args: dict) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def test_a_swe_episode_and_its_grading_run_on_the_second_host(base_image, docker2):
    task = next(t for t in load_bundled_tasks() if t.instance_id == TASK)
    image = ensure_task_image(task, log=lambda _m: None)  # on the default engine, as `rollgym image bootstrap` does
    second = client_for(docker2)
    if image_exists(image, second):
        second.images.remove(image, force=True)
    forget(docker2)
    since = int(time.time()) - 1
    env = gymnasium.make("rollgym/SWE-v0", sandbox={"docker_host": [docker2]})
    try:
        obs, info = env.reset(options={"task": task.model_dump()})
        sb = env.unwrapped.sandbox
        assert sb.host == docker2 and sb.container.labels["rollgym.docker_host"] == docker2
        assert image_exists(image, second), "the task image was provided on the second host before its sandbox"
        assert [c for c in list_containers(docker_host=DEFAULT_HOST) if sb.name == c] == []
        obs, *_ = env.step(_call("str_replace_editor", {"command": "str_replace", "path": "/testbed/inflection/__init__.py",
                                                        "old_str": "if number % 100 in (11, 12):",
                                                        "new_str": "if number % 100 in (11, 12, 13):"}))
        assert "has been edited" in obs[0]["content"]
        obs, reward, term, trunc, info = env.step(_call("submit", {}))
        assert term and reward == 1.0 and info["grade"]["status"] == "graded"
    finally:
        env.close()
    assert _graded_on(docker2, since) and not _graded_on(DEFAULT_HOST, since), "grading ran on the episode's host"


def _graded_on(host: str, since: int) -> bool:
    """Whether the daemon created a grading container for TASK since `since` (from its own event log)."""
    events = client_for(host).events(since=since, until=int(time.time()) + 1, decode=True,
                                     filters={"type": "container", "event": "create", "label": f"rollgym.task_id=grade-{TASK}"})
    return any(True for _ in events)
