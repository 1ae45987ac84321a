"""rollgym's verdict equals the official SWE-bench harness's (run through the `swebench` package itself: `run_instance`)
on every task CI runs and every bundled task, for the gold patch, the empty patch and two adversarial patches: one
that fixes the bug but breaks a PASS_TO_PASS test, one that leaves the bug and prints fake pass lines (issue 27).

The task folders (Django's runner, Go's `go test`) are graded by rollgym through the harness's own grading code, the
Django one also as an SWE-bench <= 4 row (the eval script swebench 4.1.0 writes for it, from rollgym's tables); the
bundled tasks by rollgym's pytest plugin, the harness running them as SWE-bench 5 rows of the same image."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import pytest
from support.harness import as_swebench_row, edit, harness_resolved, new_file

from rollgym.envs.swe import load_bundled_tasks
from rollgym.envs.swe.grading import grade_patch
from rollgym.envs.swe.images import ensure_task_image
from rollgym.envs.swe.legacy import as_swebench5, image_for
from rollgym.envs.swe.task import TASKS_DIR, parse_task
from rollgym.envs.swe.task_folders import read_task_folders

pytestmark = [pytest.mark.docker, pytest.mark.slow]
FOLDERS = TASKS_DIR / "swebench"
EXPECTED = {"gold": True, "empty": False, "breaks_p2p": False, "fake_pass": False}


#: the module each bundled repository's tests import, and a function its PASS_TO_PASS tests call
SOURCE = {"jpvanhal/inflection": ("inflection/__init__.py", "camelize"), "r1chardj0n3s/parse": ("parse.py", "search")}


def _read(image: str, path: str) -> str:
    out = docker.from_env().containers.run(image, ["cat", f"/testbed/{path}"], network_mode="none", remove=True)
    return out.decode()


def _patched(path: str, source: str, patch: str, tmp: Path) -> str:
    """`source` (the file at `path`) with `patch` applied, by git in a scratch repository."""
    repo = tmp / "repo"
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(source)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "apply", "-"], input=patch.encode(), check=True)
    return (repo / path).read_text()


def pytest_patches(task, image: str, tmp: Path) -> dict[str, str]:
    """A bundled (pytest) task's four patches. The adversarial ones change the source module (rollgym, unlike the
    harness, does not apply an agent's changes to test files such as conftest.py): one breaks a function the
    PASS_TO_PASS tests call, on top of the fix; one prints fake pass lines for the FAIL_TO_PASS tests at import."""
    path, victim = SOURCE[task.repo]
    source = _read(image, path)
    fixed = _patched(path, source, task.patch, tmp / task.instance_id)
    breaks = edit(path, source, fixed + f"\n\ndef {victim}(*args, **kwargs):\n    return 'broken by the patch'\n")
    fake = edit(path, source, source + "".join(f"\nprint({'PASSED ' + t!r})" for t in task.FAIL_TO_PASS) + "\n")
    return {"gold": task.patch, "empty": "", "breaks_p2p": breaks, "fake_pass": fake}


def folder_patches(row: dict) -> dict[str, str]:
    """A task folder's four patches, by hand for its repository (Django's textutils, Go's strutil)."""
    src = Path(row["task_dir"]) / "src"
    if row["log_parser"] == "parse_log_django":
        text = (src / "textutils/text.py").read_text()
        breaks = edit("textutils/text.py", text, text.replace("{conjunction} {items[-1]}", "& {items[-1]}"))
        fakes = "".join(f"print({t + ' ... ok'!r})\n" for t in row["FAIL_TO_PASS"])
        init = (src / "textutils/__init__.py").read_text()
        fake = edit("textutils/__init__.py", init, init + "\n" + fakes)
    else:
        pad = (src / "pad.go").read_text()
        broken = pad.replace("return strings.Repeat(string(pad), missing) + s", "return s", 1)
        breaks = edit("pad.go", pad, broken)
        fakes = "".join(f'\tfmt.Println("--- PASS: {t} (0.00s)")\n' for t in row["FAIL_TO_PASS"])
        fake = new_file("zz_fake.go", f'package strutil\n\nimport "fmt"\n\nfunc init() {{\n{fakes}}}\n')
    return {"gold": row["patch"], "empty": "", "breaks_p2p": row["patch"] + breaks, "fake_pass": fake}


def legacy_row(row: dict) -> dict:
    """The Django task folder as an SWE-bench <= 4 row (no eval script, parser or image: its release's tables give
    them), its image tagged with the name that release's users pull."""
    keep = ("repo", "base_commit", "problem_statement", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
    legacy = {k: row[k] for k in keep} | {"instance_id": "django__django-90001", "repo": "django/django"}
    legacy |= {"version": "3.2", "environment_setup_commit": row["base_commit"]}
    docker.from_env().images.get(row["image"]).tag(image_for(legacy, "swebench-legacy"))
    return legacy


def cases(tmp: Path):
    """(name, rollgym's task, the row the harness runs, the four patches) for every task."""
    out = []
    for row in read_task_folders(FOLDERS):
        task = parse_task(row)
        ensure_task_image(task, log=lambda _m: None)
        patches = folder_patches(row)
        out.append((task.instance_id, task, row, patches))
        if row["log_parser"] == "parse_log_django":  # the same task as an SWE-bench <= 4 row (legacy.py)
            legacy = legacy_row(row)
            out.append((legacy["instance_id"], parse_task(legacy), as_swebench5(legacy, "swebench-legacy"), patches))
    for task in load_bundled_tasks():
        out.append(
            (task.instance_id, task, None, pytest_patches(task, ensure_task_image(task, log=lambda _m: None), tmp))
        )
    return out


def test_rollgyms_verdict_is_the_official_harnesss_on_every_task(docker_engine, base_image, tmp_path, capsys):
    jobs = []
    for name, task, row, patches in cases(tmp_path):
        image = ensure_task_image(task, log=lambda _m: None)
        harness_row = row if row is not None else as_swebench_row(task, image)
        jobs += [(name, kind, task, harness_row, patch) for kind, patch in patches.items()]

    def judge(job):
        name, kind, task, harness_row, patch = job
        ours = grade_patch(task, patch)
        theirs = harness_resolved(harness_row, patch, tmp_path / "harness-logs")
        return name, kind, ours, theirs

    with ThreadPoolExecutor(max_workers=6) as pool:  # mostly waiting on Docker
        results = list(pool.map(judge, jobs))
    table = []
    for name, kind, ours, theirs in results:
        assert ours.status == "graded", (name, kind, ours.status, ours.error)
        table.append(f"{name:32} {kind:10} rollgym={ours.resolved!s:5} harness={theirs!s:5}")
        assert ours.resolved == theirs == EXPECTED[kind], table[-1]
    with capsys.disabled():
        print(
            f"\nagreement: {len(results)} of {len(results)} verdicts equal the official harness's\n" + "\n".join(table)
        )
