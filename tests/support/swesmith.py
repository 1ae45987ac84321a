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

import docker

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


#: `profiles/base.py::create_mirror` (the upstream clone at the profile's commit, its history dropped, one commit on
#: `main`, pushed to the mirror), `harness/gather.py` (the task's branch: 'Bug Patch', then 'Remove F2P Tests', pushed;
#: back on main) and the profile's image build (`git clone -o origin <mirror> /testbed`), run in a container of an
#: image whose /testbed holds the upstream repository. The mirror is local and then gone, as GitHub is offline.
LAY_OUT = r"""
set -eu
cd /testbed
git init -q --bare /tmp/mirror.git && git -C /tmp/mirror.git symbolic-ref HEAD refs/heads/main
rm -rf .git && git init -q && git config user.name swesmith && git config user.email swesmith@anon.com
rm -rf .github/workflows .github/dependabot.y*
git add --force . && git commit -q --no-gpg-sign -m 'Initial commit' && git branch -M main
git remote add origin /tmp/mirror.git && git push -q -u origin main
git checkout -q -b "$ID" && printf '%s' "$BUG" | git apply - && git add . && git commit -q --no-gpg-sign -m 'Bug Patch'
if [ -n "$F2P_FILES" ]; then rm -f $F2P_FILES && git add . && git commit -q --no-gpg-sign -m 'Remove F2P Tests'; fi
git push -q origin "$ID" && git checkout -q main && git reset -q --hard && git branch -q -D "$ID"
cd / && rm -rf /testbed && git clone -q -o origin /tmp/mirror.git /testbed && rm -rf /tmp/mirror.git
git -C /testbed remote set-url origin "https://github.com/swesmith/$MIRROR.git"
"""


def mirror_image(upstream: str, row: dict, f2p_files: list[str]) -> str:
    """The row's image (tagged `row["image_name"]`) laid out from `upstream` (/testbed: the repository at the profile's
    commit) as SWE-smith lays out its images (`LAY_OUT`); the upstream's commits are not in it. Returns its id."""
    client = docker.from_env()
    env = {
        "ID": row["instance_id"],
        "BUG": row["patch"],
        "F2P_FILES": " ".join(f2p_files),  # plain names (split by the shell)
        "MIRROR": row["repo"].removeprefix("swesmith/"),
    }
    box = client.containers.run(
        upstream, ["sh", "-c", LAY_OUT], environment=env, user="0", network_mode="none", detach=True
    )
    try:
        assert box.wait(timeout=300)["StatusCode"] == 0, box.logs().decode()
        image = box.commit(repository=row["image_name"].split(":")[0], tag="latest")
    finally:
        box.remove(force=True)
    return str(image.id)
