"""The official SWE-bench harness run as its own users run it (`swebench.harness.run_evaluation.run_instance`), for
the agreement tests: rollgym's verdict must equal the harness's on the same row and patch.

Three things differ from a stock machine, none in the harness's code: its containers get no network (this Docker
host has no default bridge, and rollgym's sandboxes have none either) and an init process (its `tail -f /dev/null`
ignores SIGTERM as PID 1, so each cleanup would wait out `docker stop --time=15`), and each run writes its logs
under a folder the test chooses (`run_instance` writes them under its relative `logs/run_evaluation`, which would
be the checkout when the suite runs from there)."""

from __future__ import annotations

import contextlib
import difflib
import uuid
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import ContainerCollection

from rollgym.envs.swe.task import SWETask


class _OfflineContainers(ContainerCollection):
    def create(self, image, command=None, **kwargs):
        kwargs.setdefault("network_mode", "none")  # no bridge here; rollgym's sandboxes have no network either
        kwargs.setdefault("init", True)  # tini as PID 1: the harness's `docker stop --time=15` ends it at once
        return super().create(image, command, **kwargs)


class OfflineClient(docker.DockerClient):
    """A Docker client whose new containers have no network and an init process (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__(**docker.utils.kwargs_from_env())

    @property
    def containers(self) -> ContainerCollection:
        return _OfflineContainers(client=self)


def harness_resolved(row: dict[str, Any], patch: str, logs: Path) -> bool | None:
    """`run_instance`'s verdict on `patch` for an SWE-bench 5 `row` (its image present): resolved, or None when the
    harness reported no result (a patch that does not apply, an error: it logs and returns None). Its logs go under
    `logs` (a temporary folder; calls from threads at once pass the same one), never the working directory."""
    from swebench.harness import run_evaluation
    from swebench.harness.run_evaluation import run_instance
    from swebench.harness.utils import make_test_spec

    # run_instance reads its log folder from this module global (relative: under the working directory) at each call
    run_evaluation.RUN_EVALUATION_LOG_DIR = Path(logs).resolve() / "run_evaluation"

    spec = make_test_spec(row)
    pred = {"instance_id": row["instance_id"], "model_name_or_path": "agreement", "model_patch": patch}
    client = OfflineClient()
    try:
        out = run_instance(spec, pred, client, run_id=f"agree-{uuid.uuid4().hex[:8]}", timeout=600)
    finally:
        client.close()
    return None if out is None else bool(out[1][row["instance_id"]]["resolved"])


def as_swebench_row(task: SWETask, image: str) -> dict[str, Any]:
    """A rollgym pytest row (a bundled task) as an SWE-bench 5 row the harness can run: its image, its test patch
    applied by the eval script, its tests with pytest `-rA` between the harness's markers, `parse_log_pytest`. One
    output stream (`exec 2>&1`): the harness reads stdout and stderr through separate pipes, whose order can change
    under load (pytest's output read after the end marker's trace)."""
    files = " ".join(task.test_files())
    apply = f"git apply -v - <<'EOF_114329324912'\n{task.test_patch}\nEOF_114329324912\n" if task.test_patch else ""
    script = (
        f"#!/bin/bash\nset -uxo pipefail\nexec 2>&1\ncd {task.workdir}\n{apply}: '>>>>> Start Test Output'\n"
        f"{task.test_command} -rA -p no:cacheprovider {files}\n: '>>>>> End Test Output'\n"
    )
    row = task.model_dump(mode="json", exclude={"row_format", "env_spec"})
    # Test ids as SWE-bench writes them: what parse_log_pytest reads off a `-rA` line, up to the first space (a
    # parametrized id with spaces is cut, and the grader matches the cut id by prefix: grading._resolve_case).
    f2p, p2p = ([t.split(" ")[0] for t in tests] for tests in (task.FAIL_TO_PASS, task.PASS_TO_PASS))
    return {
        **row,
        "image": image,
        "eval_script": script,
        "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
        "version": "0",
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
    }


def new_file(path: str, text: str) -> str:
    """A git patch that adds `path` with `text`."""
    lines = text.splitlines(keepends=True)
    body = "".join("+" + line for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def edit(path: str, before: str, after: str) -> str:
    """A git patch that turns `path` from `before` into `after`."""
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(diff)


@contextlib.contextmanager
def no_containers_left(run_label: str = "agree-"):
    """Every harness container of these runs is gone afterwards (the harness removes its own; this checks)."""
    yield
    left = [
        c.name
        for c in docker.from_env().containers.list(all=True)
        if c.name.startswith("sweb.eval.") and run_label in c.name
    ]
    assert not left, f"the harness left containers: {left}"
