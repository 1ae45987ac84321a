"""`rollgym/Calculator-v0`: arithmetic with tools, no Docker. Deterministic reward, for quick starts
and fast rollout-loop tests: 1.0 when the submitted integer equals the expression's value, else 0.0."""

from __future__ import annotations

import re
import zlib
from typing import Any

from rollgym.envs.core import Env, InvalidTaskError, tool

SYSTEM_PROMPT = (
    "You are a careful calculator. Use the tools for every operation, then call submit with the final integer."
)


def make_task(rng, index: int | None = None) -> dict[str, Any]:
    """A random task `(a op b) op c` with small integers, from a numpy Generator."""
    a, b, c = (int(x) for x in rng.integers(2, 50, size=3))
    op1, op2 = (str(o) for o in rng.choice(["+", "-", "*"], size=2))
    expr = f"({a} {op1} {b}) {op2} {c}"
    value = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}
    answer = value[op2](value[op1](a, b), c)
    task_id = (
        f"calc-{index}" if index is not None else f"calc-{zlib.crc32(expr.encode()):08x}"
    )  # stable across processes
    return {"task_id": task_id, "question": f"What is {expr}?", "answer": answer}


class CalculatorEnv(Env):
    """Tools: add, subtract, multiply (parallel-safe) and submit, all `async def` (instant, so run on the event loop). Task: {"task_id", "question", "answer"}."""

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """`n` reproducible tasks for batch generation: ids calc-0 ... calc-{n-1} for seed 0, calc-{seed}-{i}
        for another seed (each seed draws other questions, so the ids say which)."""
        import numpy as np

        rng = np.random.default_rng(seed)
        tasks = [make_task(rng, i) for i in range(n)]
        if seed:
            for i, task in enumerate(tasks):
                task["task_id"] = f"calc-{seed}-{i}"
        return tasks

    async def setup(self, task: dict[str, Any] | None):
        self.task = task or make_task(self.np_random)
        missing = {"task_id", "question", "answer"} - set(self.task)
        if missing:
            raise InvalidTaskError(f"a Calculator task needs task_id, question and answer; missing {sorted(missing)}")
        self.submitted: int | None = None
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.task["question"]}]
        return messages, {"task_id": self.task["task_id"], "question": self.task["question"]}

    @tool(parallel=True)
    async def add(self, a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @tool(parallel=True)
    async def subtract(self, a: int, b: int) -> str:
        """Subtract b from a.

        Args:
            a: the minuend
            b: the subtrahend
        """
        return str(a - b)

    @tool(parallel=True)
    async def multiply(self, a: int, b: int) -> str:
        """Multiply two integers."""
        return str(a * b)

    @tool
    async def submit(self, answer: int) -> str:
        """Submit the final answer and end the episode.

        Args:
            answer: the value of the expression
        """
        self.submitted = answer
        self.finish("submitted")
        return f"Submitted {answer}."

    async def on_text_reply(self, message: dict):
        """A plain-text reply ends the episode; its last integer counts as the answer."""
        numbers = re.findall(r"-?\d+", message.get("content") or "")
        self.submitted = int(numbers[-1]) if numbers else None
        return [], True

    async def compute_reward(self):
        correct = float(self.submitted is not None and self.submitted == int(self.task["answer"]))
        return correct, {"correct": correct, "submitted": float(self.submitted is not None)}
