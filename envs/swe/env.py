"""`rollgym/SWE-v0`: fix a repository in a Docker sandbox with bash, str_replace_editor and submit;
graded in a fresh container (see grading.py). A reply without tool calls gets one nudge, then ends."""

from __future__ import annotations

import asyncio
import functools
import shlex
from collections.abc import Callable
from typing import Any, Literal

from rollgym.envs.core import Env, InvalidTaskError, tool
from rollgym.envs.core.agent_sandbox import AgentWorkspace
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.sandbox import (
    DockerSandbox,
    SandboxConfig,
    SandboxDeadError,
    SandboxError,
    SandboxPool,
    hosts,
    start_sandbox,
)
from rollgym.envs.sandbox.hosts import home_client
from rollgym.envs.swe.base_commit import check_in
from rollgym.envs.swe.diffs import MAX_DIFF_BYTES, diff_problem
from rollgym.envs.swe.editor import EditorError, StrReplaceEditor
from rollgym.envs.swe.grading import GradeResult, grade_patch
from rollgym.envs.swe.images import ensure_task_image, task_image_name
from rollgym.envs.swe.task import SWETask, load_bundled_tasks, parse_task
from rollgym.errors import RollgymError

SYSTEM_PROMPT = """You are a software engineer fixing an issue in the repository at {workdir}.
Tools: `bash` runs one command in a fresh shell at {workdir} (no interactive programs; state persists only \
in files), `str_replace_editor` views and edits files, `submit` ends the task. Reproduce the issue, fix the \
source code (not the tests), check your fix, then call submit."""

# The first file the agent added, or grew, by more than {limit} bytes since {base} ("SIZE PATH"), found
# from sizes alone, before `git add` would hash it: a 1 GiB file is refused in a second, not graded for minutes.
OVERSIZED = (
    '{{ git ls-tree -r -l {base} | awk -F \'\\t\' \'{{split($1, f, " "); print "old " f[4] " " $2}}\'; '
    "git ls-files -z --others --exclude-standard --modified | xargs -0 -r stat -c 'new %s %n' -- 2>/dev/null; }} | "
    'awk -v l={limit} \'{{k=$1; s=$2; $1=""; $2=""; sub(/^  /, ""); '
    'if (k == "old") old[$0] = s; else if (s - old[$0] > l) {{ print s " " $0; exit }} }}\''
)


class GradingFailed(SandboxError):
    """The episode could not be graded for an infrastructure reason (its `GradeResult` says which): the
    rollout carries this error, so a trainer drops it rather than training on a reward of 0."""


class ChangeRefused(RollgymError):
    """The agent's change is refused before grading (its failure: `patch_failed`): oversized, or binary."""


NUDGE = "Please keep working on the issue with the tools, and call `submit` when your fix is complete."
# Keep the repo's state but make history past the base commit unreachable (prebuilt images may carry it).
SCRUB_GIT = (
    "git reset -q --hard {commit} && git for-each-ref --format='%(refname)' | grep -v '^refs/heads/rollgym$' "
    "| xargs -r -n1 git update-ref -d; git checkout -q -B rollgym {commit} && git remote | xargs -r -n1 git remote remove "
    "&& git reflog expire --expire=now --all && git tag -l | xargs -r git tag -d >/dev/null "
    # the caches the agent's test runs leave are not part of its answer
    "&& printf '.pytest_cache/\\n__pycache__/\\n*.pyc\\n' >> .git/info/exclude"
)


class SWEEnv(Env):
    """Options: `reset(options={"task": row})` with a row in SWE-Gym/SWE-bench schema (default: a bundled task)."""

    fatal_errors = (SandboxError,)  # a dead container or daemon failure ends the episode as an infra failure

    def __init__(
        self,
        max_turns: int | None = None,
        bash_timeout_s: float = 180.0,
        sandbox: dict[str, Any] | None = None,
        grade: bool = True,
        max_nudges: int = 1,
        pool: SandboxPool | None = None,
        max_diff_bytes: int = MAX_DIFF_BYTES,
        system_prompt: str = SYSTEM_PROMPT,
        nudge: str = NUDGE,
    ) -> None:
        """`sandbox`: SandboxConfig overrides for every task; `pool`: take sandboxes from a warm SandboxPool;
        `max_diff_bytes`: a larger change (or one file over it) is refused before grading, as `patch_failed`;
        `system_prompt`: the first message (`{workdir}` is filled in), e.g. with a tool-call example for a small
        model; `nudge`: the user message that answers a reply without tool calls (`max_nudges` times)."""
        super().__init__(max_turns=max_turns)
        self.pool = pool
        self.bash_timeout_s = bash_timeout_s
        self.sandbox_overrides = sandbox or {}
        self.grade_on_end = grade
        self.max_diff_bytes = max_diff_bytes
        self.max_nudges = max_nudges
        self.system_prompt, self.nudge = system_prompt, nudge
        self.sandbox: DockerSandbox | None = None
        self.editor: StrReplaceEditor | None = None
        self.swe_task: SWETask | None = None
        self.grade: GradeResult | None = None
        self.final_diff: str | None = None
        self.placement: dict[str, Any] = {}  # docker_host, max_per_host: grading runs on the same hosts
        self.episode_base: str | None = None  # what the agent's diff is read against (a SWE-smith task's own state)

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """The bundled tasks, at most `n`: in their file's order for seed 0, starting at task `seed` (mod their
        number) for another seed, so a reset that names no task gets a task chosen by its seed."""
        tasks = [t.model_dump(mode="json") for t in load_bundled_tasks()]
        start = seed % len(tasks) if tasks else 0
        return (tasks[start:] + tasks[:start])[:n]

    @classmethod
    def prepare_tasks(cls, tasks: list[dict[str, Any]], log: Callable[[str], None] = print) -> dict[str, BaseException]:
        """Every task's image on the default Docker host before any rollout starts (pulled from its registry, or built
        once), each image once; a row that does not parse or an image no registry serves fails only its own tasks."""
        failed: dict[str, BaseException] = {}
        images: dict[str, BaseException | None] = {}
        for row in tasks:
            tid = task_id_of(row)
            try:
                task = parse_task(row)
                name = task_image_name(task) if (task.image or task.image_name) else task.instance_id
                if name not in images:
                    try:
                        ensure_task_image(task, log, home_client(None))
                        images[name] = None
                    except SandboxError as exc:  # the image's failure is each of its tasks' failure
                        images[name] = exc
                error = images[name]
                if error is not None:
                    failed[tid] = error
            except InvalidTaskError as exc:
                failed[tid] = exc
        return failed

    async def setup(self, task: dict[str, Any] | None):
        self.swe_task = parse_task(task) if task else load_bundled_tasks()[int(self.np_random.integers(6))]
        t = self.swe_task
        self.grade, self.final_diff, self.nudges = None, None, 0
        placement = {**self.sandbox_overrides, **t.sandbox}
        self.placement = {"docker_host": placement.get("docker_host"), "max_per_host": placement.get("max_per_host")}
        image = await asyncio.to_thread(
            ensure_task_image, t, lambda _m: None, home_client(self.placement["docker_host"])
        )
        # A prebuilt image: pin base_commit and hide any later history, once per host (the group's later sandboxes
        # start from that state: sandbox/prepared.py).
        scrub = SCRUB_GIT.format(commit=shlex.quote(t.base_commit)) if (t.image_name or t.image) else None
        if scrub and t.grader == "r2e":  # R2E-Gym's setup first: its hidden tests moved out of the repository
            from rollgym.envs.swe.r2e import SETUP

            scrub = f"{SETUP} && cd {shlex.quote(t.workdir)} && {scrub}"
        if scrub and t.grader == "swesmith":  # the bug applied, the FAIL_TO_PASS test files removed, as one commit
            from rollgym.envs.swe.swesmith import bug_state

            scrub = f"{bug_state(t, for_agent=True)} && c=$(git rev-parse HEAD) && {SCRUB_GIT.format(commit='$c')}"
        config = SandboxConfig(
            **{
                "image": image,
                "workdir": t.workdir,
                "task_id": t.instance_id,
                "prepare": scrub,
                **t.default_sandbox(),
                **self.sandbox_overrides,
                **t.sandbox,
            }
        )
        self.sandbox = await (self.pool.acquire(config) if self.pool else start_sandbox(config))
        res = getattr(self.sandbox, "prepare_result", None)  # None: started from the host's prepared state
        if scrub and not hasattr(self.sandbox, "prepare_result"):  # a Sandbox that does not run `prepare` itself
            res = await self.sandbox.aexec(scrub, timeout=300)
        if res is not None:
            if res.exit_code != 0:
                await asyncio.to_thread(
                    check_in, self.sandbox, t
                )  # a commit the image lacks: one line, the right value
                what = f"base_commit {t.base_commit}" if t.base_commit else "its repository state"
                raise InvalidTaskError(f"{t.instance_id}: cannot check out {what}: {res.output[-500:]}")
        self.episode_base = t.base_commit
        if t.grader == "swesmith":  # the agent's changes are read against the state made above
            head = await self.sandbox.aexec("git rev-parse HEAD", timeout=60)
            self.episode_base = head.output.strip().splitlines()[-1]
        self.editor = StrReplaceEditor(self.sandbox, t.workdir)
        messages = [
            {"role": "system", "content": self.system_prompt.replace("{workdir}", t.workdir)},
            {
                "role": "user",
                "content": f"<issue>\n{t.problem_statement}\n</issue>\n\nThe repository is at {t.workdir}.",
            },
        ]
        return messages, {
            "task_id": t.instance_id,
            "repo": t.repo,
            "base_commit": t.base_commit or self.episode_base,
            "image": image,
        }

    @tool
    def bash(self, command: str, timeout: int | None = None) -> str:
        """Run a shell command in the repository (a fresh `sh -c` each time; output is capped).

        Args:
            command: the command line to run
            timeout: seconds before the command and all its children are killed (default 180)
        """
        sandbox = self.sandbox
        assert sandbox is not None  # setup() started it; tools run only within an episode
        res = sandbox.exec(command, timeout=min(timeout or self.bash_timeout_s, 1800))
        if res.timed_out:
            return f"{res.output}\n[the command timed out after {timeout or self.bash_timeout_s:.0f}s and was killed]".lstrip()
        return f"{res.output}\n[exit code: {res.exit_code}]".lstrip() if res.exit_code else res.output or "[no output]"

    @tool
    def str_replace_editor(
        self,
        command: Literal["view", "create", "str_replace", "insert", "undo_edit"],
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
    ) -> str:
        """View, create and edit files. `view` shows numbered lines (or a directory listing); `str_replace`
        replaces `old_str`, which must occur exactly once, by `new_str`; `insert` adds `new_str` after line
        `insert_line`; `undo_edit` reverts the last edit of `path`.

        Args:
            command: view, create, str_replace, insert or undo_edit
            path: absolute path of a file or directory
            file_text: the content of a file to create
            old_str: the exact text to replace (must be unique in the file)
            new_str: the replacement (str_replace) or the text to insert (insert)
            insert_line: the line after which to insert (0 inserts at the top)
            view_range: [start, end] line numbers to view, 1-based, end -1 for the end of the file
        """
        editor = self.editor
        assert editor is not None  # setup() made it; tools run only within an episode
        try:
            return editor.run(command, path, file_text, old_str, new_str, insert_line, view_range)
        except (EditorError, FileNotFoundError, IsADirectoryError) as exc:
            return f"Error: {exc}"

    @tool
    def submit(self) -> str:
        """Submit your changes to the repository for grading; this ends the task."""
        self.finish("submitted")
        return "Your changes were submitted."

    async def on_text_reply(self, message: dict):
        if self.nudges < self.max_nudges:
            self.nudges += 1
            task = self.swe_task
            assert task is not None  # setup() chose it; replies come only within an episode
            return [{"role": "user", "content": self.nudge.replace("{workdir}", task.workdir)}], False
        return [], True

    async def current_diff(self) -> str:
        """The agent's changes against base_commit (new files included, binary-safe); `ChangeRefused` when
        a file or the whole change is over `max_diff_bytes`, or the change holds binary files."""
        task, sandbox = self.swe_task, self.sandbox
        assert task is not None and sandbox is not None  # setup() made both; the diff is read before teardown
        base, limit = shlex.quote(self.episode_base or task.base_commit), self.max_diff_bytes
        big = await sandbox.aexec(OVERSIZED.format(base=base, limit=limit), timeout=120)
        if big.exit_code == 0 and big.output.strip():
            size, _, path = big.output.strip().partition(" ")
            raise ChangeRefused(
                f"the change makes {path} {int(size):,} bytes (over {limit:,} bytes more than at the "
                "base commit); changes that large are not graded"
            )
        res = await sandbox.aexec(
            f"git add -A && git diff --cached --binary {base} > /tmp/.rollgym-agent.diff "
            "&& stat -c %s /tmp/.rollgym-agent.diff",
            timeout=120,
        )
        if res.exit_code != 0:
            raise SandboxDeadError(f"git diff failed: {res.output[-500:]}")
        size = int(res.output.strip().splitlines()[-1])
        if size > limit:
            raise ChangeRefused(f"the change is {size:,} bytes; changes over {limit:,} bytes are not graded")
        data = await asyncio.to_thread(sandbox.read_file, "/tmp/.rollgym-agent.diff", limit + 1)
        diff = data.decode("utf-8", errors="surrogateescape")
        problem = diff_problem(diff, limit)
        if problem:
            raise ChangeRefused(problem)
        return diff

    # --- an agent CLI inside the sandbox (rollgym.envs.SandboxedEnv) ------------------------------------------
    @classmethod
    def sandbox_placement(cls, row: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        """The row's sandbox settings as `setup` will start it: the task's defaults, then `overrides`, then the row's
        own `sandbox` (which wins)."""
        task = parse_task(row)
        return {**task.default_sandbox(), **overrides, **task.sandbox}

    def agent_workspace(self) -> AgentWorkspace:
        task = self.swe_task
        assert task is not None  # setup() chose it
        return AgentWorkspace(
            workdir=task.workdir, instructions=task.problem_statement, task=task, exclude_file=".git/info/exclude"
        )

    async def agent_outcome(self) -> dict[str, Any]:
        """The agent's diff against the task's base, or why it is refused (oversized or binary: `patch_failed`); the
        graded one when `compute_reward` ran."""
        if self.final_diff is None:
            try:
                return {"diff": await self.current_diff(), "refused": None}
            except ChangeRefused as refused:
                return {"diff": "", "refused": str(refused)}
        refused = self.grade.error if self.grade is not None and self.grade.status == "patch_failed" else None
        return {"diff": self.final_diff, "refused": refused}

    async def compute_reward(self):
        task = self.swe_task
        assert task is not None  # setup() chose it; the reward is computed only for an episode it began
        if self.toolset.fatal is not None:  # the episode was cut short by the infrastructure: do not grade it
            self.grade = GradeResult(
                instance_id=task.instance_id,
                status="infra_error",
                error=f"{type(self.toolset.fatal).__name__}: {self.toolset.fatal}",
            )
            return 0.0, self.grade.reward_components()
        try:
            self.final_diff = await self.current_diff()
        except ChangeRefused as refused:  # the agent's doing: a wrong answer, decided in seconds
            self.final_diff = ""
            self.grade = GradeResult(instance_id=task.instance_id, status="patch_failed", error=str(refused))
        except Exception as exc:  # noqa: BLE001 - a dead sandbox: infrastructure, not a wrong answer
            self.grade = GradeResult(
                instance_id=task.instance_id,
                status="infra_error",
                error=f"could not read the agent's changes: {exc}",
            )
        else:
            # The agent's sandbox is done: free it before grading starts another, on its host, in its slot.
            slot = self.sandbox.take_slot() if self.sandbox is not None else None
            try:
                await self.teardown()
            except BaseException:
                if slot is not None:
                    hosts.release(slot)
                raise
            if not self.grade_on_end:
                if slot is not None:
                    hosts.release(slot)
                return 0.0, {"diff_chars": float(len(self.final_diff))}
            self.grade = await asyncio.to_thread(
                functools.partial(grade_patch, task, self.final_diff, **self.placement, slot=slot)
            )
        if self.grade.infra_failure:
            raise GradingFailed(f"{task.instance_id} was not graded ({self.grade.status}): {self.grade.error}")
        return float(self.grade.resolved), self.grade.reward_components()

    async def astep(self, action: dict):
        messages, reward, terminated, truncated, info = await super().astep(action)
        if (terminated or truncated) and self.grade is not None:
            info["grade"] = self.grade.model_dump(exclude={"all_outcomes"})  # pyright: ignore[reportGeneralTypeIssues]  # SWE's own key: a TypedDict cannot declare environments' extra keys on 3.11
            info["diff"] = self.final_diff  # pyright: ignore[reportGeneralTypeIssues]  # SWE's own key, as above
        if terminated or truncated:
            await self.teardown()
        return messages, reward, terminated, truncated, info

    async def teardown(self) -> None:
        sb, self.sandbox = self.sandbox, None
        if sb is not None:
            await (self.pool.release(sb) if self.pool else sb.aclose())
