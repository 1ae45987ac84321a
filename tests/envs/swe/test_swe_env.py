"""The SWE environment end to end: tools on a real repository in a sandbox, episodes graded in a fresh
container, editor behaviour, a sandbox killed mid-episode, and no history past base_commit."""

from __future__ import annotations

import json
import time

import gymnasium
import pytest

import rollgym.envs  # noqa: F401 - registers rollgym/SWE-v0
from rollgym.envs.sandbox import SandboxDeadError
from rollgym.envs.swe import load_bundled_tasks

pytestmark = pytest.mark.docker

TASK = "inflection__ordinal-teens"
INIT = "/testbed/inflection/__init__.py"


def call(name: str, args: dict, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def act(*calls) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


@pytest.fixture(scope="module")
def task_row(base_image):
    return next(t for t in load_bundled_tasks() if t.instance_id == TASK).model_dump()


@pytest.fixture
def env(task_row):
    env = gymnasium.make("rollgym/SWE-v0")
    yield env
    env.close()


def test_solving_the_task_gets_reward_one(env, task_row):
    obs, info = env.reset(options={"task": task_row})
    assert info["task_id"] == TASK and info["base_commit"] == task_row["base_commit"]
    assert {t["function"]["name"] for t in info["tools"]} == {"bash", "str_replace_editor", "submit"}
    assert "<issue>" in obs[-1]["content"] and "13rd" in obs[-1]["content"]
    obs, reward, term, trunc, info = env.step(
        act(call("bash", {"command": "git log --oneline | wc -l; git rev-parse HEAD; pwd"}))
    )
    lines = obs[0]["content"].split("\n")
    assert lines[:3] == ["1", task_row["base_commit"], "/testbed"]
    obs, *_ = env.step(
        act(
            call(
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": INIT,
                    "old_str": "if number % 100 in (11, 12):",
                    "new_str": "if number % 100 in (11, 12, 13):",
                },
            )
        )
    )
    assert "has been edited" in obs[0]["content"] and "(11, 12, 13)" in obs[0]["content"]
    obs, reward, term, trunc, info = env.step(act(call("submit", {})))
    assert term and not trunc and reward == 1.0
    comps = info["reward_components"]
    assert comps["resolved"] == 1.0 and comps["f2p_passed_frac"] == 1.0 and comps["p2p_passed_frac"] == 1.0
    assert info["grade"]["status"] == "graded" and "inflection/__init__.py" in info["diff"]
    assert env.unwrapped.sandbox is None  # released at the end of the episode


def test_giving_up_and_text_replies(env, task_row):
    obs, info = env.reset(options={"task": task_row})
    obs, reward, term, trunc, info = env.step({"role": "assistant", "content": "I am not sure."})
    assert not term and obs[0]["role"] == "user" and "submit" in obs[0]["content"]
    obs, reward, term, trunc, info = env.step({"role": "assistant", "content": "Done."})
    assert term and reward == 0.0
    assert info["reward_components"]["resolved"] == 0.0 and info["reward_components"]["f2p_passed_frac"] < 1.0
    assert info["reward_components"]["infra_failure"] == 0.0


def test_bash_tool_reports_exit_codes_timeouts_and_bad_arguments(env, task_row):
    env.reset(options={"task": task_row})
    obs, *_ = env.step(
        act(
            call("bash", {"command": "echo hi; exit 4"}, "a"),
            call("bash", {"command": "sleep 100", "timeout": 1}, "b"),
            call("bash", {"command": ["ls"]}, "c"),
            call("bash", {}, "d"),
        )
    )
    assert obs[0]["content"] == "hi\n\n[exit code: 4]"
    assert "timed out after 1s and was killed" in obs[1]["content"]
    assert obs[2]["content"].startswith("Error: invalid arguments") and "command" in obs[2]["content"]
    assert "Field required" in obs[3]["content"]


def test_editor_commands_and_errors(env, task_row):
    env.reset(options={"task": task_row})

    def ed(**kw):
        return env.step(act(call("str_replace_editor", kw)))[0][0]["content"]

    view = ed(command="view", path=INIT, view_range=[1, 3])
    assert view.splitlines()[1].startswith("     1\t")
    assert "inflection" in ed(command="view", path="/testbed")
    assert "appears" in ed(command="str_replace", path=INIT, old_str="return", new_str="return")
    assert "did not appear verbatim" in ed(command="str_replace", path=INIT, old_str="no such text", new_str="x")
    assert "must be absolute" in ed(command="view", path="setup.py")
    assert "already exists" in ed(command="create", path=INIT, file_text="x")
    assert "does not exist" in ed(command="view", path="/testbed/nope.py")
    assert "Input should be 'view'" in ed(command="delete", path=INIT)
    assert "File created" in ed(command="create", path="/testbed/new/mod.py", file_text="A = 1\nB = 2\n")
    assert "has been edited" in ed(command="insert", path="/testbed/new/mod.py", insert_line=1, new_str="C = 3")
    sb = env.unwrapped.sandbox
    assert sb.read_file("/testbed/new/mod.py") == b"A = 1\nC = 3\nB = 2\n"
    assert "undone" in ed(command="undo_edit", path="/testbed/new/mod.py")
    assert sb.read_file("/testbed/new/mod.py") == b"A = 1\nB = 2\n"
    assert "removed" in ed(command="undo_edit", path="/testbed/new/mod.py")
    assert "no edit to undo" in ed(command="undo_edit", path="/testbed/new/mod.py")
    sb.write_file("/testbed/latin1.txt", b"caf\xe9\nline2\n", mode=0o755)
    ed(command="str_replace", path="/testbed/latin1.txt", old_str="line2", new_str="LINE2")
    assert sb.read_file("/testbed/latin1.txt") == b"caf\xe9\nLINE2\n"
    assert sb.exec("stat -c %a /testbed/latin1.txt").output.strip() == "755"


def test_editor_reads_only_what_it_shows_of_a_huge_file(env, task_row):
    """A 2 GiB file: view reads 64 KB of it inside the sandbox, editing it is refused with a hint, the host stays small."""
    import resource

    env.reset(options={"task": task_row})
    sb = env.unwrapped.sandbox
    assert sb.exec("head -c 100 /testbed/setup.py > /testbed/big.txt && truncate -s 2G /testbed/big.txt").exit_code == 0

    def ed(**kw):
        return env.step(act(call("str_replace_editor", kw)))[0][0]["content"]

    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
    view = ed(command="view", path="/testbed/big.txt")
    assert "use view_range" in view and len(view) < 20_000
    refused = ed(command="str_replace", path="/testbed/big.txt", old_str="a", new_str="b")
    assert "2,147,483,648 bytes" in refused and "use bash" in refused
    assert "use bash" in ed(command="view", path="/testbed/big.txt", view_range=[1, 2])
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert time.monotonic() - start < 30 and grown_mb < 200, (time.monotonic() - start, grown_mb)


def test_editor_follows_links_inside_the_repository_and_refuses_other_files(env, task_row):
    env.reset(options={"task": task_row})
    sb = env.unwrapped.sandbox
    setup = (
        "ln -s inflection/__init__.py /testbed/link.py && ln -s /etc/passwd /testbed/outside && "
        "mkfifo /testbed/pipe && ln -s /testbed/missing /testbed/dangling"
    )
    assert sb.exec(setup).exit_code == 0

    def ed(**kw):
        obs, reward, term, trunc, info = env.step(act(call("str_replace_editor", kw)))
        assert not term and "error" not in info  # a tool message to the model, never the end of the episode
        return obs[0]["content"]

    assert "def ordinal" in ed(command="view", path="/testbed/link.py")
    assert "has been edited" in ed(
        command="str_replace", path="/testbed/link.py", old_str="def ordinal(", new_str="def ordinal ("
    )
    assert (
        sb.exec("test -L /testbed/link.py && grep -c 'def ordinal (' /testbed/inflection/__init__.py").output.strip()
        == "1"
    )
    assert "undone" in ed(command="undo_edit", path="/testbed/link.py")
    assert "outside the repository" in ed(command="view", path="/testbed/outside")
    assert "not a regular file (fifo)" in ed(command="view", path="/testbed/pipe")
    assert "not a regular file (character special file)" in ed(
        command="str_replace", path="/dev/null", old_str="a", new_str="b"
    )
    assert "does not exist" in ed(command="view", path="/testbed/dangling")
    obs, *_ = env.step(act(call("bash", {"command": "echo still alive"})))
    assert obs[0]["content"].strip() == "still alive"


def test_sandbox_killed_mid_episode_ends_it_with_a_clear_error(env, task_row):
    env.reset(options={"task": task_row})
    env.unwrapped.sandbox.container.kill()
    start = time.monotonic()
    obs, reward, term, trunc, info = env.step(act(call("bash", {"command": "ls"})))
    assert time.monotonic() - start < 60
    assert obs[0]["content"].startswith("Error: the environment failed") and "no longer running" in obs[0]["content"]
    assert term and reward == 0.0 and isinstance(info["error"], SandboxDeadError)
    assert info["reward_components"]["infra_failure"] == 1.0 and info["grade"]["status"] == "infra_error"


async def test_async_episode_and_close_twice(task_row):
    from rollgym.envs.swe.env import SWEEnv

    env = SWEEnv(grade=False)
    obs, info = await env.areset(options={"task": task_row})
    obs, reward, term, trunc, info = await env.astep(
        act(
            call("bash", {"command": "echo x > /testbed/NEW.txt"}),
        )
    )
    obs, reward, term, trunc, info = await env.astep(act(call("submit", {})))
    assert term and "NEW.txt" in env.final_diff
    await env.aclose()
    env.close()


def test_per_task_sandbox_overrides_and_prebuilt_image_rows(task_row):
    from rollgym.envs.sandbox import Sandbox, build_image_from_dockerfile
    from rollgym.envs.swe import SWETask, task_image_name
    from rollgym.envs.swe.env import SWEEnv

    # A "prebuilt" image whose repository has history past base_commit (a fix commit, a tag, a remote).
    future = (
        f"FROM {task_image_name(SWETask.model_validate(task_row))}\n"
        "RUN echo fixed > FIX.txt && git add FIX.txt && git commit -qm 'the fix' && git tag v-future "
        "&& git remote add origin https://example.invalid/repo.git\n"
    )
    image = build_image_from_dockerfile(future, "rollgym/test-prebuilt:future")
    row = {**task_row, "image_name": image, "env_spec": None, "sandbox": {"mem_limit": "300m", "pids_limit": 99}}
    env = SWEEnv(grade=False)
    try:
        env.reset(options={"task": row})
        sb = env.unwrapped.sandbox
        assert isinstance(sb, Sandbox)
        host = sb.container.client.api.inspect_container(sb.container.id)["HostConfig"]
        assert host["Memory"] == 300 * 1024**2 and host["PidsLimit"] == 99
        cmd = "git log --all --oneline | wc -l; git remote | wc -l; git rev-parse HEAD; git tag | wc -l; ls FIX.txt"
        obs, *_ = env.step(act(call("bash", {"command": cmd})))
        assert obs[0]["content"].split("\n")[:4] == ["1", "0", task_row["base_commit"], "0"], obs[0]["content"]
        assert "No such file" in obs[0]["content"]
    finally:
        env.close()


def test_a_prebuilt_image_without_the_base_commit_fails_reset_in_one_line(task_row):
    from rollgym.envs.swe import SWETask, task_image_name
    from rollgym.envs.swe.env import SWEEnv
    from rollgym.envs.swe.errors import WrongBaseCommitError

    row = {
        **task_row,
        "image_name": task_image_name(SWETask.model_validate(task_row)),
        "env_spec": None,
        "base_commit": "f" * 40,
    }
    env = SWEEnv(grade=False)
    with pytest.raises(WrongBaseCommitError) as info:
        env.reset(options={"task": row})
    env.close()
    assert str(info.value) == (
        f"task {TASK}: base_commit {'f' * 40} is not in the repository; its HEAD is "
        f"{task_row['base_commit']} - set base_commit to that"
    )


def test_a_failed_reset_is_a_clear_error_and_step_refuses(task_row):
    from rollgym.envs.sandbox import ImageError
    from rollgym.envs.swe.env import SWEEnv

    env = SWEEnv()
    with pytest.raises(ImageError, match="no-such-image"):
        env.reset(options={"task": {**task_row, "image_name": "rollgym/no-such-image:x", "env_spec": None}})
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(act(call("bash", {"command": "ls"})))
    env.close()


async def test_non_root_agent_from_a_warm_pool_can_solve_the_task(task_row):
    from rollgym.envs.sandbox import SandboxPool
    from rollgym.envs.swe.env import SWEEnv

    pool = SandboxPool(warm=1)
    env = SWEEnv(pool=pool, sandbox={"user": "1000:1000"})
    try:
        await env.areset(options={"task": task_row})
        obs, *_ = await env.astep(act(call("bash", {"command": "id -u && git status --short | wc -l"})))
        assert obs[0]["content"].split("\n")[:2] == ["1000", "0"]
        obs, *_ = await env.astep(
            act(
                call(
                    "str_replace_editor",
                    {
                        "command": "str_replace",
                        "path": INIT,
                        "old_str": "if number % 100 in (11, 12):",
                        "new_str": "if number % 100 in (11, 12, 13):",
                    },
                )
            )
        )
        assert "has been edited" in obs[0]["content"], obs[0]["content"]
        obs, reward, term, _, info = await env.astep(act(call("submit", {})))
        assert term and reward == 1.0 and info["grade"]["status"] == "graded"
        assert pool.created >= 1
    finally:
        await env.aclose()
        await pool.aclose()


@pytest.mark.parametrize(
    "command,why",
    [
        ("truncate -s 1G /testbed/blob.bin", "blob.bin 1,073,741,824 bytes"),  # a new file: refused from its size alone
        (
            "head -c 3000000 /dev/zero | tr '\\0' a >> /testbed/inflection/__init__.py",
            "inflection/__init__.py",
        ),  # grown
        ("printf 'x\\0y' > /testbed/tiny.bin", "binary file contents"),
    ],
)
def test_an_oversized_or_binary_change_is_the_agents_failure_decided_in_seconds(env, task_row, command, why):
    """Not `infra_error` (retry or drop): a policy must not escape its penalty by writing a huge or binary file."""
    env.reset(options={"task": task_row})
    assert env.unwrapped.sandbox.exec(command, timeout=120).exit_code == 0
    start = time.monotonic()
    obs, reward, term, trunc, info = env.step(act(call("submit", {})))
    assert time.monotonic() - start < 30
    assert term and reward == 0.0 and info["grade"]["status"] == "patch_failed" and why in info["grade"]["error"]
    comps = info["reward_components"]
    assert comps["infra_failure"] == 0.0 and comps["patch_applied"] == 0.0


def test_grade_patch_refuses_a_huge_or_binary_diff_before_starting_a_container(task_row):
    from rollgym.envs.swe import SWETask, grade_patch

    task = SWETask.model_validate(task_row)
    huge = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -0,0 +1 @@\n+" + "a" * (3 * 2**20) + "\n"
    binary = "diff --git a/b.bin b/b.bin\nnew file mode 100644\nGIT binary patch\nliteral 3\nKcmZ?wdj&\n\nliteral 0\n"
    for diff, why in ((huge, "not graded"), (binary, "binary")):
        start = time.monotonic()
        result = grade_patch(task, diff)
        assert result.status == "patch_failed" and why in result.error and not result.infra_failure
        assert time.monotonic() - start < 1.0


async def test_the_agent_runs_unprivileged_by_default_in_built_task_images(task_row):
    """Issue 17, item 11: no root by default where the task allows it (rollgym's own images do)."""
    from rollgym.envs.swe.env import SWEEnv

    env = SWEEnv()
    try:
        await env.areset(options={"task": task_row})
        obs, *_ = await env.astep(
            act(call("bash", {"command": "id -u; touch /etc/x 2>&1; touch f && echo repo-writable"}))
        )
        out = obs[0]["content"]
        assert out.split("\n")[0] == "1000", out
        assert "Permission denied" in out and "repo-writable" in out
    finally:
        await env.aclose()
