"""A row's `base_commit` checked against its image's repository, and reported in one line that gives the
right value, instead of a build log or a failed `git reset`."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from rollgym.envs.swe.errors import WrongBaseCommitError

if TYPE_CHECKING:
    from rollgym.envs.sandbox import DockerSandbox
    from rollgym.envs.swe.task import SWETask

# What the image build prints when the commit it makes is not the row's (see images.task_dockerfile).
_BUILD_SAYS = re.compile(r"base commit is ([0-9a-f]{40}), task says")
# Prints "present" or "absent", then the repository's HEAD.
PROBE = "git cat-file -e {commit}^{{commit}} 2>/dev/null && echo present || echo absent; git rev-parse HEAD 2>&1"


def mismatch(task: SWETask, head: str, built: bool) -> WrongBaseCommitError:
    """The one-line error: what the row says, why it is wrong, and the commit it should say."""
    said = task.base_commit or "''"
    why = "is not the commit the image build makes" if built else "is not in the repository"
    return WrongBaseCommitError(
        f"task {task.instance_id}: base_commit {said} {why}; its HEAD is {head} - set base_commit to that", head=head
    )


def build_mismatch(task: SWETask, build_log: str) -> WrongBaseCommitError | None:
    """The error for a failed image build that found another base commit; None for any other failure."""
    found = _BUILD_SAYS.search(build_log)
    return mismatch(task, found.group(1), built=True) if found else None


def check_in(sandbox: DockerSandbox, task: SWETask) -> None:
    """Raise `WrongBaseCommitError` if the sandbox's repository lacks the row's base_commit (prebuilt images), or,
    for a SWE-smith row without one, both the task's branch and the mirror's `main` (`swesmith.bug_commit`)."""
    if task.grader == "swesmith" and not task.base_commit:
        from rollgym.envs.swe.swesmith_state import check_state_in

        return check_state_in(sandbox, task)
    res = sandbox.exec(PROBE.format(commit=shlex.quote(task.base_commit or "-")), timeout=120)
    lines = res.output.strip().splitlines()
    if lines[:1] != ["present"]:
        raise mismatch(task, lines[-1].strip() if len(lines) > 1 else "unknown (not a git repository?)", built=False)


def check_image(task: SWETask, image: str) -> None:
    """`check_in` a throwaway container of `image` (what `validate` and `task build` do for prebuilt images)."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig

    config = SandboxConfig(
        image=image,
        workdir=task.workdir,
        task_id=f"commit-{task.instance_id}",
        use_runner=False,
        **task.default_sandbox(),
    )
    with DockerSandbox(config) as sb:
        check_in(sb, task)
