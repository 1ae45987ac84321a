"""The Calculator as a verifiers 0.4 taskset (`verifiers.v1`): a `Taskset` of `Task`s whose tools are a `Toolset`
(an MCP server, launched per rollout as verifiers does) and whose reward is an `@reward` method. The tasks come from
the benchmark's workload file ($BENCH_PEERS_WORKLOAD)."""

from __future__ import annotations

import json
import os

import verifiers.v1 as vf
from verifiers.v1.utils.decorators import reward, tool


class CalculatorToolset(vf.Toolset[vf.ToolsetConfig, vf.State]):
    TOOL_PREFIX = None  # the tools keep their names: add, subtract, multiply, submit

    @tool
    async def add(self, a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @tool
    async def subtract(self, a: int, b: int) -> str:
        """Subtract b from a."""
        return str(a - b)

    @tool
    async def multiply(self, a: int, b: int) -> str:
        """Multiply two integers."""
        return str(a * b)

    @tool
    async def submit(self, answer: int) -> str:
        """Submit the final answer and end the episode."""
        return f"Submitted {answer}."


class CalculatorData(vf.TaskData):
    answer: int = 0


class CalculatorTask(vf.Task[CalculatorData]):
    @classmethod
    def toolsets(cls, config):
        return [CalculatorToolset(vf.ToolsetConfig(runtime=vf.SubprocessConfig()))]

    @reward
    async def correct(self, trace) -> float:
        return 0.0


class CalculatorTaskset(vf.Taskset[CalculatorTask]):
    def load(self):
        with open(os.environ["BENCH_PEERS_WORKLOAD"]) as f:
            work = json.load(f)
        for row in work["tasks"]:
            data = CalculatorData(
                id=row["task_id"], prompt=row["question"], system_prompt=work["system"], answer=row["answer"]
            )
            yield CalculatorTask(data, self.config.task)


__all__ = ["CalculatorTaskset"]


if __name__ == "__main__":  # verifiers starts each rollout's tool server as `python -m vf_calculator`
    CalculatorToolset.run()
