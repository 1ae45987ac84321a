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
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


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
        obs, *_ = env.step(
            _call(
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/testbed/inflection/__init__.py",
                    "old_str": "if number % 100 in (11, 12):",
                    "new_str": "if number % 100 in (11, 12, 13):",
                },
            )
        )
        assert "has been edited" in obs[0]["content"]
        obs, reward, term, trunc, info = env.step(_call("submit", {}))
        assert term and reward == 1.0 and info["grade"]["status"] == "graded"
    finally:
        env.close()
    assert _graded_on(docker2, since) and not _graded_on(DEFAULT_HOST, since), "grading ran on the episode's host"


def _graded_on(host: str, since: int) -> bool:
    """Whether the daemon created a grading container for TASK since `since` (from its own event log)."""
    events = client_for(host).events(
        since=since,
        until=int(time.time()) + 1,
        decode=True,
        filters={"type": "container", "event": "create", "label": f"rollgym.task_id=grade-{TASK}"},
    )
    return any(True for _ in events)


@pytest.mark.slow
def test_a_host_killed_during_a_batch_of_swe_rollouts(base_image, docker2, tool_tok, say, monkeypatch):
    """`run_rollouts` over both hosts; the second dockerd is SIGKILLed while every episode runs commands: the
    rollouts there are recorded as `sandbox` errors (infrastructure), the others finish, nothing is left on the
    live host, and the killed host is started again."""
    import asyncio

    from support.docker2 import kill_docker2, start_docker2

    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.sandbox import RUN_ID, hosts, prune
    from rollgym.limits import Limits
    from rollgym.rollouts.batch import run_rollouts
    from rollgym.rollouts.policy import Policy

    monkeypatch.setattr(hosts, "COOLDOWN_S", 1.0)
    task = next(t for t in load_bundled_tasks() if t.instance_id == TASK)
    ensure_task_image(task, log=lambda _m: None)
    both = [DEFAULT_HOST, docker2]
    before = {h: set(list_containers(run_id=RUN_ID, docker_host=h)) for h in both}
    engine = ScriptedEngine(lambda prompt, s: say.call("bash", command="sleep 1; echo step"))

    def mine(host: str) -> set[str]:
        return {c for c in list_containers(run_id=RUN_ID, docker_host=host) if "grade" not in c} - before[host]

    async def main():
        job = asyncio.create_task(
            run_rollouts(
                "rollgym/SWE-v0",
                [task.model_dump(mode="json")],
                Policy(engine=engine, tokenizer=tool_tok),
                n=4,
                concurrency=4,
                limits=Limits(max_turns=20, max_model_len=8192),
                env_kwargs={"sandbox": {"docker_host": both}},
            )
        )
        # Until the four episodes run commands, two on each host: 20 turns of `sleep 1` keep each alive long
        # enough for the last one to start under load (with 6 turns, the first could end before it did).
        for _ in range(900):
            await asyncio.sleep(0.1)
            if len(mine(DEFAULT_HOST)) == 2 and len(mine(docker2)) == 2 and engine.calls >= 4:
                break
        assert (len(mine(DEFAULT_HOST)), len(mine(docker2))) == (2, 2)
        kill_docker2()
        return await asyncio.wait_for(job, 300)

    t0 = time.monotonic()
    try:
        rollouts = asyncio.run(main())
    finally:
        start_docker2()
    failed = [r for r in rollouts if r.error is not None]
    assert len(failed) == 2 and {r.error.category for r in failed} == {"sandbox"}, [r.error for r in failed]
    assert all(r.stop_reason == "max_turns" and r.reward == 0.0 for r in rollouts if r.error is None), rollouts
    assert time.monotonic() - t0 < 240
    assert set(list_containers(run_id=RUN_ID, docker_host=DEFAULT_HOST)) == before[DEFAULT_HOST]
    prune(run_id=RUN_ID, docker_host=docker2)  # what the killed daemon held
    assert set(list_containers(run_id=RUN_ID, docker_host=docker2)) <= before[docker2]


def test_grading_reuses_the_episodes_slot(base_image, docker2):
    """With one slot per host, grading in the episode's slot (what SWEEnv does) runs at once on that host;
    asking for a new slot would wait for ever, since the slot is still held."""
    import threading

    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, hosts
    from rollgym.envs.swe import grade_patch

    task = next(t for t in load_bundled_tasks() if t.instance_id == TASK)
    image = ensure_task_image(task, log=lambda _m: None)
    sb = DockerSandbox(
        SandboxConfig(image=image, docker_host=[docker2], max_per_host=1, task_id="episode", use_runner=False)
    )
    slot = sb.take_slot()
    sb.close()
    assert slot == docker2 and hosts.load([docker2]) == {docker2: 1}, "the slot outlives the sandbox that gave it"
    done: list = []
    worker = threading.Thread(
        target=lambda: done.append(
            grade_patch(task, task.patch, docker_host=[DEFAULT_HOST, docker2], max_per_host=1, slot=slot)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(120)  # a daemon thread: were it waiting for a slot for ever, the test fails and the session still ends
    assert done and done[0].resolved, done
    assert hosts.load([docker2]) == {docker2: 0}
    # A refused patch is decided without a sandbox, and still frees the slot it was given.
    from rollgym.envs.swe.diffs import MAX_DIFF_BYTES

    refused = grade_patch(task, "x" * (MAX_DIFF_BYTES + 1), slot=hosts.reserve([docker2], 1))
    assert refused.status == "patch_failed" and hosts.load([docker2]) == {docker2: 0}
