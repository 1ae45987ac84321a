"""`rollgym/Harbor-v0`: a Harbor task folder as an episode: the model works in the task's container with the SWE
environment's tools (bash, str_replace_editor, submit), then Harbor's verifier grades that container (verifier.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from rollgym.envs.core import tool
from rollgym.envs.core.agent_sandbox import AgentWorkspace
from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.harbor.errors import RewardFileError, VerifierInfraError, VerifierTimeoutError
from rollgym.envs.harbor.folders import HarborTask, parse_harbor_task
from rollgym.envs.harbor.images import ensure_harbor_image
from rollgym.envs.harbor.mcp import harbor_mcp_servers
from rollgym.envs.harbor.sandbox_config import image_workdir, task_sandbox
from rollgym.envs.harbor.verifier import HarborGrade, verify
from rollgym.envs.sandbox import SandboxConfig, SandboxError, start_sandbox
from rollgym.envs.sandbox.hosts import home_client
from rollgym.envs.swe.editor import StrReplaceEditor
from rollgym.envs.swe.env import SWEEnv
from rollgym.errors import UsageError

SYSTEM_PROMPT = """You are working in a Linux container; your working directory is {workdir}.
Tools: `bash` runs one command in a fresh shell (no interactive programs; state persists only in files), \
`str_replace_editor` views and edits files, `submit` ends the task. Do the task below, check your work, then \
call submit."""
NUDGE = "Please keep working on the task with the tools, and call `submit` when you are done."
TIME_UP = "[the task's time limit ([agent] timeout_sec) is over: the episode ends now]"


class HarborEnv(SWEEnv):
    """Options: `reset(options={"task": row})` with a row `{"task_id", "task_dir"}` (`rollgym.load_tasks(PATH)` on a
    task folder or a dataset folder of them)."""

    def __init__(
        self,
        max_turns: int | None = None,
        bash_timeout_s: float = 180.0,
        sandbox: dict[str, Any] | None = None,
        grade: bool = True,
        max_nudges: int = 1,
        system_prompt: str = SYSTEM_PROMPT,
        nudge: str = NUDGE,
    ) -> None:
        """`sandbox`: SandboxConfig overrides for every task (they win over task.toml's); `grade=False` ends an
        episode without running the verifier (reward 0)."""
        super().__init__(
            max_turns=max_turns,
            bash_timeout_s=bash_timeout_s,
            sandbox=sandbox,
            grade=grade,
            max_nudges=max_nudges,
            system_prompt=system_prompt,
            nudge=nudge,
        )
        self.harbor_task: HarborTask | None = None
        self.own_mcp_servers = self.mcp_servers  # the class's; each task's own are added at setup
        self.deadline: float | None = None  # [agent] timeout_sec from setup, on the monotonic clock

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        raise UsageError(
            "rollgym/Harbor-v0 has no default tasks: pass --tasks PATH (a task folder or a folder of them)"
        )

    @classmethod
    def prepare_tasks(cls, tasks: list[dict[str, Any]], log: Callable[[str], None] = print) -> dict[str, BaseException]:
        """Every task's image before any rollout (pulled, or built once per content hash); a task whose folder is
        refused or whose image (or base image) cannot be had fails alone, naming why."""
        failed: dict[str, BaseException] = {}
        for row in tasks:
            try:
                ensure_harbor_image(parse_harbor_task(row), log, home_client(None))
            except (InvalidTaskError, SandboxError) as exc:
                failed[task_id_of(row)] = exc
        return failed

    @classmethod
    def sandbox_placement(cls, row: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        return {**task_sandbox(parse_harbor_task(row)), **overrides}

    async def setup(self, task: dict[str, Any] | None):
        if task is None:
            raise InvalidTaskError("rollgym/Harbor-v0 needs a task: reset(options={'task': row})")
        t = self.harbor_task = await asyncio.to_thread(parse_harbor_task, task)
        task_servers = harbor_mcp_servers(t.task_id, t.config.environment.mcp_servers)
        self.mcp_servers = (*self.own_mcp_servers, *task_servers)  # started in the sandbox, after this setup
        self.grade, self.final_diff, self.nudges = None, None, 0
        client = home_client(self.sandbox_overrides.get("docker_host"))
        image = await asyncio.to_thread(ensure_harbor_image, t, lambda _m: None, client)
        workdir = await asyncio.to_thread(image_workdir, image, client)
        config = SandboxConfig(**{"image": image, "workdir": workdir, **task_sandbox(t), **self.sandbox_overrides})
        self.sandbox = await start_sandbox(config)
        self.editor = StrReplaceEditor(self.sandbox, config.workdir)
        timeout = t.config.agent.timeout_sec
        self.deadline = time.monotonic() + timeout if timeout else None
        messages = [
            {"role": "system", "content": self.system_prompt.replace("{workdir}", config.workdir)},
            {"role": "user", "content": t.instruction},
        ]
        return messages, {"task_id": t.task_id, "image": image}

    @tool
    def bash(self, command: str, timeout: int | None = None) -> str:
        """Run a shell command in the task's container (a fresh `sh -c` each time; output is capped).

        Args:
            command: the command line to run
            timeout: seconds before the command and all its children are killed (default 180)
        """
        left = self._time_left()
        if left is not None and left <= 0:
            self.finish("time_limit")
            return TIME_UP
        cap = timeout or self.bash_timeout_s
        run = SWEEnv.bash  # pyright: ignore[reportAttributeAccessIssue]  # `tool` returns the method it marks; its union return type hides that
        return run(
            self, command, timeout=int(max(1, min(cap, left))) if left is not None else timeout
        )  # the SWE tool, within the task's time limit

    def _time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    async def on_text_reply(self, message: dict):
        if self.nudges < self.max_nudges:
            self.nudges += 1
            return [{"role": "user", "content": self.nudge}], False
        return [], True

    def agent_workspace(self) -> AgentWorkspace:
        task, sandbox = self.harbor_task, self.sandbox
        assert task is not None and sandbox is not None  # setup() made both
        # no task object: agents read an SWE task's patch from it, and a Harbor task has none
        return AgentWorkspace(workdir=sandbox.config.workdir, instructions=task.instruction, task=None)

    async def agent_outcome(self) -> dict[str, Any]:
        """What the verifier said of the agent's work (a Harbor task leaves no diff)."""
        return {"grade": self.grade.model_dump() if isinstance(self.grade, HarborGrade) else None}

    async def compute_reward(self):
        task, sandbox = self.harbor_task, self.sandbox
        assert task is not None  # setup() read it; the reward is computed only for an episode it began
        if self.toolset.fatal is not None or sandbox is None:
            why = f"{type(self.toolset.fatal).__name__}: {self.toolset.fatal}" if self.toolset.fatal else "no sandbox"
            self.grade = HarborGrade(task_id=task.task_id, status="infra_error", error=why)  # pyright: ignore[reportAttributeAccessIssue]  # info["grade"]: the verifier's outcome
            raise VerifierInfraError(f"{task.task_id} was not verified: {why}")
        if not self.grade_on_end:
            await self.teardown()
            return 0.0, {}
        grade = await asyncio.to_thread(verify, sandbox, task)
        self.grade = grade  # pyright: ignore[reportAttributeAccessIssue]  # info["grade"]: the verifier's outcome
        await self.teardown()
        if grade.status == "task_error":
            raise RewardFileError(f"{task.task_id}: {grade.error}")
        if grade.status == "timeout":
            raise VerifierTimeoutError(f"{task.task_id}: {grade.error}")
        if grade.status == "infra_error":
            raise VerifierInfraError(f"{task.task_id} was not verified: {grade.error}")
        assert grade.reward is not None  # graded
        return grade.reward, grade.components
