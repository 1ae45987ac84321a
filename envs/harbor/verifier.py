"""Harbor's verification in the agent's container, after the agent is done: the stale reward files removed, `tests/`
copied to /tests only now, `tests/test.sh` run within `[verifier] timeout_sec`, then its reward file read."""

from __future__ import annotations

import shlex
import time
from typing import Literal

from pydantic import BaseModel, Field

from rollgym.envs.harbor.errors import RewardFileError
from rollgym.envs.harbor.folders import HarborTask
from rollgym.envs.harbor.rewards import REWARD_JSON, REWARD_TXT, VERIFIER_DIR, parse_reward_json, parse_reward_txt
from rollgym.envs.sandbox import DockerSandbox, SandboxError
from rollgym.envs.sandbox.errors import DirectoryInSandboxError, FileNotInSandboxError

TESTS_DIR = "/tests"
TEST_STDOUT = f"{VERIFIER_DIR}/test-stdout.txt"
# graded: a reward was read; task_error: the task's tests left none (why: `error`); timeout: test.sh ran too long;
# infra_error: the verification could not run.
VerifyStatus = Literal["graded", "task_error", "timeout", "infra_error"]


class HarborGrade(BaseModel):
    """One verification's outcome (`info["grade"]` of the episode's last step)."""

    task_id: str
    status: VerifyStatus
    reward: float | None = None  # None unless graded
    components: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    exit_code: int | None = None
    log_tail: str = ""
    duration_s: float = 0.0


def verify(sandbox: DockerSandbox, task: HarborTask) -> HarborGrade:
    """Run the task's tests in `sandbox` (the agent's, now finished) and read the reward, as Harbor's verifier
    does; never raises for the task's or the infrastructure's failure: the grade's status says which."""
    start = time.monotonic()
    grade = HarborGrade(task_id=task.task_id, status="infra_error")
    try:
        return _verify(sandbox, task, grade, start)
    except SandboxError as exc:
        return grade.model_copy(
            update={"error": f"{type(exc).__name__}: {exc}", "duration_s": time.monotonic() - start}
        )


def _verify(sandbox: DockerSandbox, task: HarborTask, grade: HarborGrade, start: float) -> HarborGrade:
    verifier = task.config.verifier
    clean = sandbox.exec(
        f"rm -rf -- {REWARD_TXT} {REWARD_JSON} {TESTS_DIR} && mkdir -p {VERIFIER_DIR} {TESTS_DIR}", timeout=60
    )
    if not clean.ok:
        return grade.model_copy(update={"error": f"cannot clear the stale reward files: {clean.output[-500:]}"})
    sandbox.upload_dir(str(task.tests_dir), TESTS_DIR)
    script = f"{TESTS_DIR}/test.sh"
    run = sandbox.exec(
        f"chmod +x {script} && {script} > {TEST_STDOUT} 2>&1",
        timeout=verifier.timeout_sec,
        env=dict(verifier.env) or None,
        max_output=4000,
    )
    tail = _tail(sandbox)
    done = {"exit_code": run.exit_code, "log_tail": tail, "duration_s": time.monotonic() - start}
    if run.timed_out:
        return grade.model_copy(
            update={"status": "timeout", "error": f"tests/test.sh ran over {verifier.timeout_sec:g}s", **done}
        )
    try:
        rewards = _read_rewards(sandbox)
    except RewardFileError as exc:
        why = f"{exc} (tests/test.sh exited {run.exit_code})"
        return grade.model_copy(update={"status": "task_error", "error": why, **done})
    return grade.model_copy(
        update={"status": "graded", "reward": rewards.reward, "components": rewards.components, **done}
    )


def _read_rewards(sandbox: DockerSandbox):
    for path, parse in ((REWARD_JSON, parse_reward_json), (REWARD_TXT, parse_reward_txt)):
        try:
            data = sandbox.read_file(path, max_bytes=1 << 20)
        except (FileNotInSandboxError, DirectoryInSandboxError):
            continue
        return parse(data)
    raise RewardFileError(f"tests/test.sh wrote no reward file ({REWARD_TXT} or {REWARD_JSON})")


def _tail(sandbox: DockerSandbox) -> str:
    res = sandbox.exec(f"tail -c 3000 {shlex.quote(TEST_STDOUT)} 2>/dev/null", timeout=30)
    return res.output
