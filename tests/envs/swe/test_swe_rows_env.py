"""Episodes on SWE-bench 5 rows (the Django and Go task folders): the agent's sandbox is the row's environment (its
image, workdir, user and the environment its eval script sets up), so `bash` runs the toolchain the grader will, and
a fix made through the tools is graded by the official harness. In an image without python3, bash, the editor and
grading still work (the sandbox falls back to plain `docker exec`)."""

from __future__ import annotations

import io
import json

import docker
import gymnasium
import pytest

import rollgym.envs  # noqa: F401 - registers rollgym/SWE-v0
from rollgym.envs.swe.task import TASKS_DIR
from rollgym.envs.swe.task_folders import read_task_folders

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: what the agent's shell must find in each row's environment: the runner its eval script uses
TOOLCHAIN = {
    "rollgym__django-textutils-1": ("python3 -c 'import django; print(django.get_version())'", "3.2"),
    "rollgym__go-strutil-1": ("go version && go env GOFLAGS GOPROXY", "-mod=mod\noff"),
}


def call(name: str, args: dict, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def act(*calls) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


@pytest.fixture(scope="module")
def rows(base_image):
    from rollgym.envs.swe.images import ensure_task_image
    from rollgym.envs.swe.task import parse_task

    found = {row["instance_id"]: row for row in read_task_folders(TASKS_DIR / "swebench")}
    for row in found.values():
        ensure_task_image(parse_task(row), log=lambda _m: None)
    return found


def _solve(env, row: dict) -> tuple[float, dict]:
    """Reset on `row`, check the toolchain from `bash`, apply the gold patch from `bash`, submit."""
    obs, info = env.reset(options={"task": row})
    assert info["task_id"] == row["instance_id"]
    command, expected = TOOLCHAIN[row["instance_id"]]
    obs, *_ = env.step(act(call("bash", {"command": f"pwd && {command}"})))
    out = obs[0]["content"]
    assert out.startswith("/testbed\n") and expected in out, out
    apply = f"git apply <<'ROLLGYM_EOF'\n{row['patch']}ROLLGYM_EOF\ngit status --short"
    obs, *_ = env.step(act(call("bash", {"command": apply})))
    assert " M " in obs[0]["content"], obs[0]["content"]
    obs, reward, term, trunc, info = env.step(act(call("submit", {})))
    assert term and not trunc
    return reward, info


@pytest.mark.parametrize("instance_id", sorted(TOOLCHAIN))
def test_a_fix_made_in_the_rows_environment_is_resolved_by_the_harness(rows, instance_id):
    env = gymnasium.make("rollgym/SWE-v0")
    try:
        reward, info = _solve(env, rows[instance_id])
    finally:
        env.close()
    assert reward == 1.0 and info["grade"]["status"] == "graded", info["grade"]
    assert info["reward_components"]["resolved"] == 1.0
    assert all(o == "passed" for o in info["grade"]["f2p"].values()) and info["grade"]["f2p"]


def test_an_image_without_python3_still_runs_bash_the_editor_and_grading(rows):
    row = rows["rollgym__go-strutil-1"]
    client = docker.from_env()
    bare = f"rollgym/test-no-python:{row['instance_id']}"  # kept: the build is cached, and episodes fork from it
    client.images.build(
        fileobj=io.BytesIO(
            f"FROM {row['image']}\nRUN rm -f /usr/bin/python3* /usr/local/bin/python3* && "
            "! command -v python3\n".encode()
        ),
        tag=bare,
        rm=True,
        network_mode="none",
    )
    env = gymnasium.make("rollgym/SWE-v0")
    try:
        no_python = {k: v for k, v in row.items() if k != "task_dir"} | {"image": bare}
        obs, info = env.reset(options={"task": no_python})
        obs, *_ = env.step(act(call("bash", {"command": "command -v python3 || echo no-python3"})))
        assert obs[0]["content"].strip() == "no-python3"
        path = next(line.split(" b/", 1)[1] for line in row["patch"].splitlines() if line.startswith("diff --git"))
        obs, *_ = env.step(act(call("str_replace_editor", {"command": "view", "path": f"/testbed/{path}"})))
        assert "package strutil" in obs[0]["content"]
        apply = f"git apply <<'ROLLGYM_EOF'\n{row['patch']}ROLLGYM_EOF\ngit diff --stat"
        obs, *_ = env.step(act(call("bash", {"command": apply})))
        assert path in obs[0]["content"]
        obs, reward, term, trunc, info = env.step(act(call("submit", {})))
        assert term and reward == 1.0 and info["grade"]["status"] == "graded", info["grade"]
    finally:
        env.close()
