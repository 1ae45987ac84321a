"""Grading in a fresh container. SWE-bench 5 rows: as the official harness grades them (`harness.py`); R2E-Gym rows
as R2E-Gym does (`r2e.py`). Other rows:
the agent's diff (minus test files), then `test_patch`, then the F2P and P2P tests with per-test outcomes from a
pytest plugin, cross-checked with the exit status."""

from __future__ import annotations

import json
import shlex
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, SandboxError
from rollgym.envs.sandbox.daemon import client_for
from rollgym.envs.sandbox.hosts import home_client, release
from rollgym.envs.swe import harness, r2e, swesmith
from rollgym.envs.swe.diffs import diff_paths, diff_problem, filter_agent_diff
from rollgym.envs.swe.images import ensure_task_image
from rollgym.envs.swe.task import SWETask

PLUGIN_SOURCE = (Path(__file__).parent / "pytest_plugin.py").read_text()
GRADE_DIR = "/tmp/rollgym-grade"

# graded: the tests ran and were parsed; patch_failed: the agent's diff does not apply (a wrong answer);
# timeout / oom / infra_error / task_error: not the agent's answer being wrong: retry or drop, do not train on.
GradeStatus = Literal["graded", "patch_failed", "timeout", "oom", "infra_error", "task_error"]
INFRA_STATUSES = ("timeout", "oom", "infra_error", "task_error")
#: outcomes (the pytest plugin's names) that count as success, as the official harness counts them: `test_passed`
#: for FAIL_TO_PASS, `test_maintained` for PASS_TO_PASS (`swebench.harness.grading`, 5.0.2)
F2P_SUCCESS = frozenset({"passed", "xfailed"})
P2P_SUCCESS = frozenset({"passed", "xfailed", "skipped"})
#: pytest's exit codes that mean no named test ran (pytest.ExitCode.USAGE_ERROR, NO_TESTS_COLLECTED)
PYTEST_RAN_NOTHING = {4: "usage error, e.g. a named file or test id not found", 5: "no tests collected"}


class GradeResult(BaseModel):
    """The verdict on one patch, with every component a trainer might use."""

    instance_id: str
    status: GradeStatus
    resolved: bool = False
    f2p: dict[str, str] = Field(default_factory=dict)  # test id -> outcome (passed, failed, skipped, missing, ...)
    p2p: dict[str, str] = Field(default_factory=dict)
    exit_code: int | None = None
    dropped_paths: list[str] = Field(default_factory=list)  # agent changes to tests, not applied
    error: str | None = None
    log_tail: str = ""
    duration_s: float = 0.0
    all_outcomes: dict[str, str] | None = None  # every test that ran (only with keep_all_outcomes=True)

    @property
    def f2p_passed_frac(self) -> float:
        """The share of FAIL_TO_PASS tests that now pass (1.0 when there are none)."""
        return _frac(self.f2p, F2P_SUCCESS)

    @property
    def p2p_passed_frac(self) -> float:
        """The share of PASS_TO_PASS tests still maintained (1.0 when there are none)."""
        return _frac(self.p2p, P2P_SUCCESS)

    @property
    def infra_failure(self) -> bool:
        return self.status in INFRA_STATUSES

    def reward_components(self) -> dict[str, float]:
        return {
            "resolved": float(self.resolved),
            "f2p_passed_frac": self.f2p_passed_frac,
            "p2p_passed_frac": self.p2p_passed_frac,
            "patch_applied": float(self.status != "patch_failed"),
            "infra_failure": float(self.infra_failure),
        }


def _frac(outcomes: dict[str, str], success: frozenset[str]) -> float:
    return sum(o in success for o in outcomes.values()) / len(outcomes) if outcomes else 1.0


def resolved_by(f2p: dict[str, str], p2p: dict[str, str]) -> bool:
    """SWE-bench's resolution rule (`swebench.harness.grading`, 5.0.2): every FAIL_TO_PASS test passes (or xfails)
    and every PASS_TO_PASS test is maintained (passes, xfails or is skipped); a missing test is a failure."""
    return all(o in F2P_SUCCESS for o in f2p.values()) and all(o in P2P_SUCCESS for o in p2p.values())


def apply_patch(sb: DockerSandbox, patch: str, name: str) -> str | None:
    """Apply a patch in the repo; None on success, else the tools' complaint."""
    path = f"{GRADE_DIR}/{name}.patch"
    text = patch if patch.endswith("\n") else patch + "\n"
    sb.write_file(path, text.encode("utf-8", errors="surrogateescape"))
    res = sb.exec(
        f"git apply --whitespace=nowarn {path} 2>&1 || patch -p1 --forward --batch --no-backup-if-mismatch < {path}",
        timeout=120,
    )
    return None if res.exit_code == 0 else res.output[-2000:]


def grade_patch(
    task: SWETask,
    diff: str,
    *,
    mem_limit: str = "4g",
    cpus: float = 1.0,
    keep_all_outcomes: bool = False,
    log=lambda _m: None,
    docker_host: str | list[str] | None = None,
    max_per_host: int | None = None,
    slot: str | None = None,
) -> GradeResult:
    """Run the task's tests against `diff` in a fresh sandbox (on one of `docker_host`: see `SandboxConfig`);
    never raises for infrastructure failures. `slot`: a placement slot already held on a host (the episode's,
    `DockerSandbox.take_slot`): grading runs there and frees it."""
    start = time.monotonic()
    result = GradeResult(instance_id=task.instance_id, status="infra_error")
    try:
        refused = diff_problem(diff or "")
        if refused:  # decided before any container starts, in no time
            result.status, result.error = "patch_failed", refused
            return result
        image = ensure_task_image(task, log=log, client=client_for(slot) if slot else home_client(docker_host))
        if task.grader in ("swebench", "r2e", "swesmith"):  # they reset test files themselves; R2E's are hidden
            filtered = diff or ""
        else:
            filtered, result.dropped_paths = filter_agent_diff(diff or "", diff_paths(task.test_patch))
        config = SandboxConfig(
            image=image,
            workdir=task.workdir,
            task_id=f"grade-{task.instance_id}",
            mem_limit=mem_limit,
            cpus=cpus,
            pids_limit=2048,
            max_output_bytes=20_000,
            docker_host=[slot] if slot else docker_host,
            max_per_host=max_per_host,
        )
        reserved, slot = slot, None  # the sandbox owns it now (and frees it, even if its creation fails)
        with DockerSandbox(config, _reserved_host=reserved) as sb:
            if task.grader == "swebench":
                harness.grade_in(sb, task, filtered, result)
            elif task.grader == "r2e":
                r2e.grade_in(sb, task, filtered, result)
            elif task.grader == "swesmith":
                swesmith.grade_in(sb, task, filtered, result)
            else:
                _grade_in(sb, task, filtered, result)
        if not keep_all_outcomes:
            result.all_outcomes = None
    except SandboxError as exc:
        result.status, result.error = "infra_error", f"{type(exc).__name__}: {exc}"
    finally:
        if slot is not None:  # not handed to a sandbox
            release(slot)
    result.duration_s = time.monotonic() - start
    return result


def _grade_in(sb: DockerSandbox, task: SWETask, diff: str, result: GradeResult) -> None:
    if diff.strip():
        problem = apply_patch(sb, diff, "agent")
        if problem is not None:
            result.status, result.error = "patch_failed", f"the patch does not apply:\n{problem}"
            return
    if task.test_patch.strip():
        problem = apply_patch(sb, task.test_patch, "test")
        if problem is not None:
            result.status, result.error = "task_error", f"the task's test_patch does not apply:\n{problem}"
            return
    # A fresh module name and results path per run: a module the agent added cannot stand in for the plugin.
    token = uuid.uuid4().hex
    sb.write_file(f"{GRADE_DIR}/rollgym_results_{token}.py", PLUGIN_SOURCE)
    results_path = f"{GRADE_DIR}/results-{token}.json"
    files = " ".join(shlex.quote(f) for f in task.test_files())
    cmd = (
        f"export PYTHONPATH={GRADE_DIR}${{PYTHONPATH:+:$PYTHONPATH}} ROLLGYM_RESULTS={results_path}; "
        f"{task.test_command} -p rollgym_results_{token} -rA -p no:cacheprovider {files}"
    )
    res = sb.exec(cmd, timeout=task.test_timeout_s)
    result.exit_code, result.log_tail = res.exit_code, res.output[-5000:]
    if res.timed_out:
        result.status, result.error = "timeout", f"the tests did not finish within {task.test_timeout_s:.0f}s"
        return
    state = sb.status()
    if "OOMKilled" in state or (res.exit_code == 137 and state.startswith("running")):
        result.status, result.error = "oom", "the test run was killed (out of memory)"
        return
    if res.exit_code is None or not state.startswith("running"):  # killed, stopped, or the daemon lost it
        result.status = "infra_error"
        result.error = f"the test run did not complete (container {state}): {res.output[-500:]}"
        return
    if res.exit_code in PYTEST_RAN_NOTHING:
        # pytest ran none of the named tests (a test id it cannot find, or nothing collected): no verdict, whoever's
        # doing it is, so a correct fix is never scored as wrong (and a test-deleting diff is never scored at all).
        result.status = "task_error"
        result.error = (
            f"the test runner ran none of the named tests (pytest exit {res.exit_code}: "
            f"{PYTEST_RAN_NOTHING[res.exit_code]}); is `test_command` right for this repository, and are "
            f"FAIL_TO_PASS/PASS_TO_PASS pytest node ids? {res.output[-300:]}"
        )
        return
    try:
        report = json.loads(sb.read_file(results_path))
    except (FileNotFoundError, json.JSONDecodeError) as exc:
        # With the agent's changes applied this is the agent's doing (e.g. code that kills pytest): graded, all missing.
        result.status = "graded" if diff.strip() else "task_error"
        result.error = f"pytest produced no results ({exc}); exit code {res.exit_code}"
        result.f2p = dict.fromkeys(task.FAIL_TO_PASS, "missing")
        result.p2p = dict.fromkeys(task.PASS_TO_PASS, "missing")
        return
    outcomes: dict[str, str] = report.get("results", {})
    result.all_outcomes = outcomes
    named = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    if named and not any(t in outcomes for t in named) and not any(k.startswith("collect::") for k in outcomes):
        result.status = "task_error"  # the runner ran, but not one of the tests the task names: ids in another format
        result.error = (
            f"none of the {len(named)} named tests ran ({len(outcomes)} other tests did, e.g. "
            f"{sorted(outcomes)[:3]}): the task's test ids are not this runner's"
        )
        return
    result.f2p = {t: outcomes.get(t, "missing") for t in task.FAIL_TO_PASS}
    result.p2p = {t: outcomes.get(t, "missing") for t in task.PASS_TO_PASS}
    any_failed = any(o in ("failed", "error") for o in outcomes.values())
    consistent = report.get("exitstatus") == res.exit_code and (res.exit_code == 0) == (not any_failed)
    result.status = "graded"
    if not consistent:
        result.error = (
            f"test results disagree with the exit status ({res.exit_code}, reported "
            f"{report.get('exitstatus')}): not trusted"
        )
        result.f2p = dict.fromkeys(result.f2p, "untrusted")
        result.p2p = dict.fromkeys(result.p2p, "untrusted")
    result.resolved = consistent and resolved_by(result.f2p, result.p2p)


class GradingInfraError(SandboxError):
    """Grading could not judge the diff (timeout, OOM, a broken image or task): infrastructure, never the agent's
    answer; a rollout that meets it is an infrastructure failure (retried on resume, not trained on)."""


def swe_reward(row: dict, diff: Any, rollout: object = None) -> tuple[float, dict[str, float]]:
    """The reward of a black-box agent's diff (a string, or the `AgentDiff` of an agent run in its sandbox) on an SWE
    task row, for `rollgym.run_agents` and `agent_rollout_func`: `resolved` (0/1) and the grader's reward components, graded in a fresh container (needs Docker). A diff the
    grader could not judge raises `GradingInfraError`."""
    from rollgym.envs.swe.task import parse_task

    task = parse_task(row)
    refused = getattr(diff, "refused", None)  # an agent run in its sandbox whose change was refused there
    if refused:
        result = GradeResult(instance_id=task.instance_id, status="patch_failed", error=str(refused))
        return 0.0, result.reward_components()
    result = grade_patch(task, diff if isinstance(diff, str) else str(getattr(diff, "diff", "") or ""))
    if result.infra_failure:
        raise GradingInfraError(f"grading {result.instance_id} failed ({result.status}): {result.error}")
    return float(result.resolved), result.reward_components()
