"""Grading integrity on the bundled tasks: gold resolves, empty does not, and tampering, skips,
fake results, broken patches, timeouts and missing images are each judged correctly."""

from __future__ import annotations

import json

import pytest

from rollgym.envs.swe import grade_patch, load_bundled_tasks
from rollgym.envs.swe.diffs import filter_agent_diff, is_test_path
from rollgym.envs.swe.validate import validate_tasks

pytestmark = pytest.mark.docker


@pytest.fixture(scope="session")
def tasks(base_image):
    from rollgym.envs.swe import build_task_images

    rows = load_bundled_tasks()
    build_task_images(rows, log=lambda _m: None)
    return {t.instance_id: t for t in rows}


@pytest.fixture(scope="session")
def base_file(tasks):
    """Read a file of a task's repository at base_commit (from its image)."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig
    from rollgym.envs.swe import task_image_name

    def read(task, path: str) -> str:
        with DockerSandbox(SandboxConfig(image=task_image_name(task), task_id="read", use_runner=False)) as sb:
            return sb.read_file(f"{task.workdir}/{path}").decode()

    return read


def _edit(path: str, before: str, after: str) -> str:
    import difflib

    body = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"))
    return f"diff --git a/{path} b/{path}\n{body}"


def test_bundled_tasks_are_real_and_well_formed(tasks):
    assert len(tasks) >= 6
    assert len({t.repo for t in tasks.values()}) >= 2
    for t in tasks.values():
        assert t.FAIL_TO_PASS and t.PASS_TO_PASS and t.patch.startswith("diff --git")
        assert t.env_spec.sdist_sha256 and t.env_spec.bug_patch
        assert not set(t.FAIL_TO_PASS) & set(t.PASS_TO_PASS)
        removed = [
            ln[1:].strip()
            for ln in t.env_spec.bug_patch.splitlines()
            if ln.startswith("-") and not ln.startswith("---")
        ]
        assert not any(r and r in t.problem_statement for r in removed), "the statement gives the fix away"


@pytest.mark.slow
def test_validate_every_bundled_task_gold_resolves_empty_does_not(tasks):
    rows = validate_tasks(list(tasks.values()), workers=2)
    bad = {r.instance_id: r.problem for r in rows if not r.ok}
    assert not bad, bad
    for r in rows:
        assert r.gold.f2p_passed_frac == 1.0 and r.gold.p2p_passed_frac == 1.0
        assert r.empty.f2p_passed_frac < 1.0 and r.empty.status == "graded"


def test_agent_changes_to_tests_are_not_applied(tasks, base_file):
    task = tasks["inflection__ordinal-teens"]
    tests = base_file(task, "test_inflection.py")
    gutted = _edit("test_inflection.py", tests, "def test_ordinal():\n    pass\n")
    cheat = (
        "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1,2 @@\n"
        "+import pytest\n+collect_ignore_glob = ['*']\n"
    )
    res = grade_patch(task, cheat + gutted)
    assert sorted(res.dropped_paths) == ["conftest.py", "test_inflection.py"]
    assert res.status == "graded" and not res.resolved and res.f2p_passed_frac < 1.0
    assert res.p2p_passed_frac == 1.0


def test_skipped_f2p_tests_do_not_count_as_passing(tasks, base_file):
    task = tasks["inflection__ordinal-teens"]
    src = base_file(task, "inflection/__init__.py")
    fixed = src.replace(
        "if number % 100 in (11, 12):",
        "if number % 100 == 13:\n        import pytest; pytest.skip('not today')\n    if number % 100 in (11, 12, 13):",
    )
    res = grade_patch(task, _edit("inflection/__init__.py", src, fixed))
    assert res.status == "graded", res.error
    assert "skipped" in res.f2p.values() and not res.resolved


def test_fake_results_written_by_agent_code_are_not_trusted(tasks):
    task = tasks["inflection__ordinal-teens"]
    fake = {"exitstatus": 0, "results": dict.fromkeys(task.FAIL_TO_PASS + task.PASS_TO_PASS, "passed")}
    hook = (
        f"+import atexit as _ae, os as _os\n+_ae.register(lambda: open(_os.environ['ROLLGYM_RESULTS'], 'w')"
        f".write({json.dumps(json.dumps(fake))}))\n+print('PASSED ' * 3)\n"
    )
    patch = (
        "diff --git a/inflection/__init__.py b/inflection/__init__.py\n--- a/inflection/__init__.py\n"
        "+++ b/inflection/__init__.py\n@@ -11,0 +12,3 @@\n" + hook
    )
    res = grade_patch(task, patch)
    assert res.status == "graded" and not res.resolved, res
    assert "not trusted" in (res.error or "")


def test_a_patch_that_does_not_apply_is_a_wrong_answer_not_an_infra_failure(tasks):
    task = tasks["parse__fixed-spans"]
    res = grade_patch(task, task.patch.replace("m.span(n)", "m.span(nope)"))
    assert res.status == "patch_failed" and not res.resolved and not res.infra_failure
    assert res.reward_components()["patch_applied"] == 0.0


def test_timeouts_and_missing_images_are_infrastructure_failures(tasks, base_file):
    task = tasks["parse__fixed-spans"].model_copy(update={"test_timeout_s": 3.0})
    src = base_file(task, "parse.py")
    hang = _edit(
        "parse.py",
        src,
        src.replace(
            "import logging\n",
            "import logging, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n",
            1,
        ),
    )
    res = grade_patch(task, hang)
    assert res.status == "timeout" and res.infra_failure and not res.resolved
    assert res.duration_s < 60
    missing = task.model_copy(update={"image_name": "rollgym/no-such-image:never"})
    res = grade_patch(missing, task.patch)
    assert res.status == "infra_error" and "no-such-image" in res.error


def test_test_path_rules():
    assert all(
        map(
            is_test_path,
            ["tests/test_x.py", "pkg/tests/util.py", "test_inflection.py", "conftest.py", "a/b_test.py", "tox.ini"],
        )
    )
    assert not any(map(is_test_path, ["parse.py", "inflection/__init__.py", "docs/testing.rst", "contest.py"]))
    diff = "diff --git a/parse.py b/parse.py\n+x\ndiff --git a/tests/test_a.py b/tests/test_a.py\n+y\n"
    kept, dropped = filter_agent_diff(diff, set())
    assert kept == "diff --git a/parse.py b/parse.py\n+x\n" and dropped == ["tests/test_a.py"]


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_grading_run_that_did_not_complete_is_an_infrastructure_status_never_graded(tasks, base_file, how):
    """The grading container dies during pytest (killed, or stopped): not the agent's wrong answer."""
    import threading
    import time

    from rollgym.envs.sandbox import RUN_ID, docker_client

    task = tasks["parse__fixed-spans"]
    src = base_file(task, "parse.py")
    slow = _edit("parse.py", src, src.replace("import logging\n", "import logging, time\ntime.sleep(20)\n", 1))
    name = f"grade-{task.instance_id}"

    def kill_when_tests_run() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            mine = {"label": [f"rollgym.task_id={name}", f"rollgym.run_id={RUN_ID}"]}  # not another session's
            for c in docker_client().containers.list(filters=mine):
                if "pytest" in str(c.top()):
                    time.sleep(1.0)
                    c.kill() if how == "kill" else c.stop(timeout=1)
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_when_tests_run, daemon=True)
    killer.start()
    res = grade_patch(task, slow)
    killer.join(timeout=5)
    assert res.status != "graded" and res.infra_failure, res
    assert res.reward_components()["infra_failure"] == 1.0 and not res.resolved


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"FAIL_TO_PASS": ["test_ordinal_teens (test_inflection.OrdinalTests)"]}, id="django-ids"),
        pytest.param({"test_command": "python3 -m pytest -k no_such_test_anywhere"}, id="nothing-collected"),
    ],
)
def test_a_runner_that_ran_none_of_the_named_tests_is_never_graded(tasks, change):
    """The issue's Django row graded by pytest: ids pytest cannot find (exit 4), or nothing selected (exit 5). The
    gold patch must not come out `graded` and unresolved (a correct fix scored 0): no verdict, with the reason."""
    task = tasks["inflection__ordinal-teens"]
    if "test_command" in change:  # the runner of a row rollgym builds is its env_spec's
        change = {"env_spec": task.env_spec.model_copy(update=change)}
    task = task.model_copy(update=change)
    res = grade_patch(task, task.patch)
    assert res.status == "task_error" and res.infra_failure and not res.resolved, res
    assert "ran none of the named tests" in res.error and f"pytest exit {res.exit_code}" in res.error
    assert res.exit_code == (4 if "FAIL_TO_PASS" in change else 5)
