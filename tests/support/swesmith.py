"""SWE-smith's own harness (swesmith 0.0.9 with swebench 4.1.0, in the venv `.ci/harnesses-up` makes), run as its users
run it (`swesmith.harness.eval.run_evaluation`), for the agreement test: rollgym's verdict must equal it.

Three things differ from a stock machine, none in the harness's grading: its containers get no network (this Docker
host has no default bridge, and rollgym's sandboxes have none either) and an init (its `tail -f /dev/null` ignores
SIGTERM as PID 1); `RepoProfile._is_repo_private`, which asks GitHub's API, says False; and `RepoProfile.clone`
(Go profiles clone the repository's mirror to find which files hold which tests) copies the snapshot's repository
from a local folder instead. Its `git fetch` fails
offline and is only logged, as the harness allows; the task's branch is in the image."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

HARNESSES_UP = Path(__file__).resolve().parents[2] / ".ci" / "harnesses-up"

SCRIPT = r"""
import json, shutil, sys, tempfile
from docker.models.containers import ContainerCollection

_create = ContainerCollection.create


def create(self, image=None, command=None, **kwargs):
    kwargs.setdefault("network_mode", "none")
    kwargs.setdefault("init", True)
    return _create(self, image, command, **kwargs)


ContainerCollection.create = create
from swesmith.profiles.base import RepoProfile

RepoProfile._is_repo_private = lambda self: False
from swesmith.harness.eval import run_evaluation

args = json.loads(sys.stdin.read())
if args.get("clone_from"):  # the mirror's repository, as its clone would give it
    RepoProfile.clone = lambda self, dest=None: (shutil.copytree(args["clone_from"], tempfile.mkdtemp() + "/r"), True)
pred = {"instance_id": args["instance"]["instance_id"], "model_patch": args["patch"], "model_name_or_path": "agree"}
print("RESULT " + json.dumps(run_evaluation(pred, args["instance"], args["run_id"])))
"""


def python() -> Path | None:
    """The SWE-smith venv's python, when `.ci/harnesses-up` made it."""
    path = Path(subprocess.run(["bash", str(HARNESSES_UP), "python"], capture_output=True, text=True).stdout.strip())
    return path if path.is_file() else None


def swesmith_resolved(instance: dict, patch: str, cwd: Path, clone_from: Path | None = None) -> bool | None:
    """SWE-smith's verdict on `patch` (resolved), or None when its harness reported no completed evaluation."""
    interpreter = python()
    assert interpreter is not None, "no SWE-smith venv: run .ci/harnesses-up"
    args = {"instance": instance, "patch": patch, "run_id": f"agree-{uuid.uuid4().hex[:8]}"}
    if clone_from is not None:
        args["clone_from"] = str(clone_from)
    proc = subprocess.run(
        [str(interpreter), "-c", SCRIPT], input=json.dumps(args), capture_output=True, text=True, cwd=cwd, timeout=600
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"SWE-smith's harness printed no result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT ") :])
    return bool(result["resolved"]) if result["status"] == "completed" else None
