"""The repository state of a SWE-smith row, found as SWE-smith finds it (swesmith 0.0.9, MIT:
`harness/utils.py::run_patch_in_container`, `harness/gather.py`, `profiles/base.py::create_mirror`), never by the
profile's upstream hash, which its images do not hold: the task's branch, else the row's bug on the mirror's `main`."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from rollgym.envs.swe.errors import WrongBaseCommitError

if TYPE_CHECKING:
    from rollgym.envs.sandbox import DockerSandbox
    from rollgym.envs.swe.task import SWETask

#: the mirror's branch (`create_mirror`: `git branch -M main`), as its clone in the image has it
MAIN = "$(git rev-parse -q --verify refs/heads/main || git rev-parse -q --verify refs/remotes/origin/main || echo main)"
#: the messages of the task branch's commits (`harness/gather.py`)
BUG_COMMIT, REMOVED_TESTS = "'Bug Patch'", "'Remove F2P Tests'"
COMMIT = (
    "git -c user.name=rollgym -c user.email=tasks@rollgym.invalid -c commit.gpgsign=false commit -q --allow-empty "
    "--no-verify -m {message}"
)


def bug_commit(task: SWETask, bug_patch: str) -> str:
    """The commands that check out the task's bug commit as SWE-smith finds it: on the task's branch (named by the
    instance id, local or `origin/`), its `HEAD~1` when its last commit removed the FAIL_TO_PASS tests, else its
    HEAD; without the branch, the row's bug applied to the row's `base_commit`, or to the mirror's `main`, and
    committed (SWE-smith's "Bug Patch")."""
    branch = shlex.quote(task.instance_id)
    base = shlex.quote(task.base_commit) if task.base_commit else MAIN
    bug = shlex.quote(bug_patch)
    made = (
        f"git checkout -q --detach {base} && printf '%s' {bug} > /tmp/rollgym-bug.diff "
        f"&& git apply /tmp/rollgym-bug.diff && git add -A && {COMMIT.format(message=BUG_COMMIT)}"
    )
    return (
        f"if b=$(git rev-parse -q --verify refs/heads/{branch} || git rev-parse -q --verify refs/remotes/origin/{branch}); "
        f'then if [ "$(git log -1 --format=%s "$b")" = {REMOVED_TESTS} ]; then b=$b~1; fi; '
        f'git checkout -q --detach "$b"; else {made}; fi'
    )


def check_state_in(sandbox: DockerSandbox, task: SWETask) -> None:
    """Raise `WrongBaseCommitError` if the sandbox's repository has neither the task's branch nor a `main` to apply
    the row's bug to (not laid out as SWE-smith's mirror): its HEAD is then what the row's base_commit should say."""
    branch = shlex.quote(task.instance_id)
    probe = (
        f"git rev-parse -q --verify refs/heads/{branch} || git rev-parse -q --verify refs/remotes/origin/{branch} "
        "|| git rev-parse -q --verify refs/heads/main || git rev-parse -q --verify refs/remotes/origin/main "
        "|| { echo absent; git rev-parse HEAD 2>&1; }"
    )
    lines = sandbox.exec(probe, timeout=120).output.strip().splitlines()
    if lines[:1] == ["absent"] or not lines:
        head = lines[-1].strip() if len(lines) > 1 else "unknown (not a git repository?)"
        raise WrongBaseCommitError(
            f"task {task.instance_id}: the image's repository has neither the task's branch {task.instance_id} nor "
            f"the mirror's main branch SWE-smith's images have; its HEAD is {head} - set base_commit to that",
            head=head,
        )
