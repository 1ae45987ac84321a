"""Scripted policies and environments for the distributed tests (tests/integrations/ray), pickled by value
so Ray actors need not import the tests (in CI rollgym itself is installed, the tests are not)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import ray

from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.envs.core import tool

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

TASKS = CalculatorEnv.default_tasks(6)


class Solver:
    """First turn: add(1, 2); then submit the answer of the task in the prompt."""

    def __init__(self, tok):
        self.tok = tok
        self.add = self._call('{"name": "add", "arguments": {"a": 1, "b": 2}}')
        self.submit = {
            t["question"]: self._call(json.dumps({"name": "submit", "arguments": {"answer": t["answer"]}}))
            for t in TASKS
        }

    def _call(self, body: str) -> list[int]:
        return self.tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tok.end_of_turn_id]

    def __call__(self, prompt, sampling):
        text = self.tok.decode(prompt)
        question = next(q for q in self.submit if q in text)
        return self.add if text.count("<|im_start|>assistant") == 1 else self.submit[question]


class AlwaysCall:
    """Every turn: call `tool` without arguments."""

    def __init__(self, tok, tool: str):
        self.ids = tok.encode(f'<tool_call>\n{{"name": "{tool}", "arguments": {{}}}}\n</tool_call>') + [
            tok.end_of_turn_id
        ]

    def __call__(self, prompt, sampling):
        return self.ids


class WhereEnv(CalculatorEnv):
    """A Calculator with a `where` tool: the Ray node and process that ran it. A task's `mark` names a file its
    tool leaves in the folder `gate`; a task with `wait_for` holds its first call until those files exist (at
    most 60 s), so a test need not guess how slow the machine is."""

    async def setup(self, task):
        task = task or {}
        self.gate = Path(task["gate"]) if "gate" in task else None
        self.mark = task.get("mark")
        self.wait_for = list(task.get("wait_for", []))
        return await super().setup(task)

    @tool
    async def where(self) -> str:
        """The node id and process id."""
        if self.gate and self.mark:
            (self.gate / self.mark).touch()
        for _ in range(600):
            if not self.wait_for or all((self.gate / name).exists() for name in self.wait_for):
                break
            await asyncio.sleep(0.1)
        self.wait_for = []
        return f"{ray.get_runtime_context().get_node_id()} {os.getpid()}"


class MarkedEnv(CalculatorEnv):
    """A Calculator whose `wait` tool takes 0.3 s; setup and teardown leave marker files (in a shared folder)."""

    def __init__(self, marks: str):
        super().__init__()
        self.marks = Path(marks)

    async def setup(self, task):
        out = await super().setup(task)
        (self.marks / f"setup-{id(self)}-{os.getpid()}").touch()
        return out

    async def teardown(self):
        if getattr(self, "submitted", "unset") != "unset":
            (self.marks / f"teardown-{id(self)}-{os.getpid()}").touch()

    @tool
    async def wait(self) -> str:
        """Wait a little."""
        await asyncio.sleep(0.3)
        return "waited"


class SandboxedEnv(CalculatorEnv):
    """A Calculator whose episode holds a Docker sandbox, placed over `hosts` at most `cap` per host (with a lease of
    `lease_s`, renewed over its runner's socket; else the default lease and no runner); its `hold` tool keeps it 0.5 s
    (the sandbox lives from setup to teardown)."""

    def __init__(self, image: str, hosts: list[str], cap: int | None, run_id: str, lease_s: float | None = None):
        super().__init__()
        from rollgym.envs.sandbox import SandboxConfig

        self.config = SandboxConfig(
            image=image,
            docker_host=hosts,
            max_per_host=cap,
            run_id=run_id,
            task_id="ledger" if lease_s is None else "leased",
            use_runner=lease_s is not None,
            lease_s=lease_s,
        )
        self.sandbox = None

    async def setup(self, task):
        from rollgym.envs.sandbox import start_sandbox

        self.sandbox = await start_sandbox(self.config)
        return await super().setup(task)

    async def teardown(self):
        if self.sandbox is not None:
            await self.sandbox.aclose()

    @tool
    async def hold(self) -> str:
        """Keep the sandbox a little."""
        await asyncio.sleep(0.5)
        return self.sandbox.host


class SandboxedEnvFactory:
    def __init__(self, *args):
        self.args = args

    def __call__(self):
        return SandboxedEnv(*self.args)


class MarkedEnvFactory:
    def __init__(self, marks: Path):
        self.marks = str(marks)

    def __call__(self):
        return MarkedEnv(self.marks)


def token_views(rollouts):
    return [(r.task_id, r.sample_index, r.reward, r.stop_reason, r.token_view()) for r in rollouts]
