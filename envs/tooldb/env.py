"""`rollgym/ToolDB-v0`: a general-agent task folder as an episode in-process: the model calls the task's `@tool`
methods on a fresh copy of its database, plus `submit`; the task's `verify(db)` on the database left is the reward."""

from __future__ import annotations

import copy
import math
from typing import Any

from rollgym.envs.core import Env, InvalidTaskError, tool
from rollgym.envs.core.errors import InvalidRewardError
from rollgym.envs.core.spaces import action_space
from rollgym.envs.core.tools import ToolSet
from rollgym.envs.tooldb.db_tasks import ToolDBTask, read_tooldb_task
from rollgym.errors import UsageError

SYSTEM_PROMPT = "Do the user's task with the tools. Call `submit` when you are done."


class ToolDBEnv(Env):
    """Options: `reset(options={"task": row})` with a row `{"task_id", "task_dir"}` (`rollgym.load_tasks(PATH)`)."""

    def __init__(self, max_turns: int | None = None, system_prompt: str = SYSTEM_PROMPT) -> None:
        super().__init__(max_turns=max_turns)
        self.system_prompt = system_prompt
        self.tooldb_task: ToolDBTask | None = None
        self.db: dict[str, Any] = {}

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        raise UsageError(
            "rollgym/ToolDB-v0 has no default tasks: pass --tasks PATH (a task folder or a folder of them)"
        )

    async def setup(self, task: dict[str, Any] | None):
        if task is None:
            raise InvalidTaskError("rollgym/ToolDB-v0 needs a task: reset(options={'task': row})")
        t = self.tooldb_task = read_tooldb_task(task)
        self.db = copy.deepcopy(t.db)  # every episode starts from the task's database
        tools = t.tools_class()(self.db)
        self.toolset = ToolSet.from_object(self, extra=[getattr(tools, n) for n in _tool_names(type(tools))])
        self.action_space = action_space(list(self.toolset.tools))
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": t.instruction}]
        return messages, {"task_id": t.task_id}

    @tool
    def submit(self) -> str:
        """Say you are done; this ends the task."""
        self.finish("submitted")
        return "Submitted."

    async def compute_reward(self):
        task = self.tooldb_task
        assert task is not None  # setup() read it
        reward = task.verify(self.db)
        if not math.isfinite(reward):
            raise InvalidRewardError(f"{task.task_id}: verify(db) returned {reward!r}")
        return reward, {"verify": reward}


def _tool_names(cls: type) -> list[str]:
    return [name for name, value in vars(cls).items() if hasattr(value, "__rollgym_tool__")]
