"""verifiers v1 tasksets written as verifiers 0.4.0's own source shapes them (a `TaskData` with the answer, a `Task`
with `@vf.reward`s and `@vf.stop`s, a `Toolset` with `@vf.tool`s, a `Taskset` whose `load()` yields the tasks):
arithmetic with a calculator tool, a number-guessing game played through a tool with state, a plain question, and
a task whose reward raises."""

from __future__ import annotations

import re

import verifiers.v1 as vf

from rollgym.envs.suites.reasoning_gym.expression import evaluate


class ArithmeticData(vf.TaskData):
    answer: str


class Calculator(vf.Toolset):
    """An arithmetic calculator (`ast`-only: no code of the model's runs)."""

    @vf.tool
    async def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression such as (17 * 3) - 4 and return its value."""
        return str(evaluate(expression))


def boxed_or_last_number(text: str) -> str:
    """The model's answer: `\\boxed{...}` content, else the last number of the reply."""
    boxed = vf.extract_boxed_answer(text)
    if boxed and boxed != text:
        return boxed.strip()
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text or "")
    return numbers[-1] if numbers else ""


class ArithmeticTask(vf.Task[ArithmeticData, vf.State]):
    @classmethod
    def toolsets(cls, config: vf.TaskConfig) -> list[vf.Toolset]:
        return [Calculator(vf.ToolsetConfig())]

    @vf.reward
    async def correct(self, task: ArithmeticData, trace: vf.Trace) -> float:
        return float(boxed_or_last_number(trace.last_reply) == task.answer)

    @vf.metric
    async def tool_calls(self, trace: vf.Trace) -> float:
        return float(sum(len(m.tool_calls or []) for m in trace.assistant_messages))


class ArithmeticTaskset(vf.Taskset[ArithmeticTask]):
    def load(self):
        for a, b in [(17, 25), (123, 456), (9, 9)]:
            yield ArithmeticTask(
                ArithmeticData(
                    prompt=f"What is {a} * {b}? Use the calculator, then answer in \\boxed{{}}.",
                    system_prompt="You are a careful assistant.",
                    answer=str(a * b),
                ),
                self.config.task,
            )


class GuessState(vf.State):
    guesses: list[int] = []
    solved: bool = False


class GuessData(vf.TaskData):
    secret: int


class NumberGame(vf.Toolset[vf.ToolsetConfig, GuessState]):
    """The game's board: each guess is answered higher / lower / correct."""

    TOOL_PREFIX = None

    async def setup_task(self, task) -> None:
        self.secret = task.secret

    @vf.tool
    async def guess(self, number: int) -> str:
        """Guess the secret number between 1 and 100."""
        self.state.guesses.append(number)
        if number == self.secret:
            self.state.solved = True
            return "correct"
        return "higher" if number < self.secret else "lower"


class GuessTask(vf.Task[GuessData, GuessState]):
    @classmethod
    def toolsets(cls, config: vf.TaskConfig) -> list[vf.Toolset]:
        return [NumberGame(vf.ToolsetConfig())]

    @vf.stop
    async def solved(self, trace: vf.Trace) -> bool:
        return trace.state.solved

    @vf.reward
    async def won(self, trace: vf.Trace) -> float:
        return float(trace.state.solved)

    @vf.reward(weight=0.1)
    async def few_guesses(self, trace: vf.Trace) -> float:
        return 1.0 / max(len(trace.state.guesses), 1)


class GuessTaskset(vf.Taskset[GuessTask]):
    def load(self):
        for secret in (42, 7):
            yield GuessTask(
                GuessData(prompt="Find my secret number (1-100) with the guess tool.", secret=secret), self.config.task
            )


class QuestionData(vf.TaskData):
    answer: str


class QuestionTask(vf.Task[QuestionData, vf.State]):
    @vf.reward
    async def exact(self, task: QuestionData, trace: vf.Trace) -> float:
        return float(trace.last_reply.strip().lower() == task.answer)


class QuestionTaskset(vf.Taskset[QuestionTask]):
    def load(self):
        yield QuestionTask(
            QuestionData(prompt="What is the capital of France? One word.", answer="paris"), self.config.task
        )


class SometimesBrokenTask(QuestionTask):
    @vf.reward
    async def exact(self, task: QuestionData, trace: vf.Trace) -> float:
        if task.answer == "raise":
            raise RuntimeError("the rubric's judge is unreachable")
        return float(trace.last_reply.strip().lower() == task.answer)


class SometimesBrokenTaskset(vf.Taskset[SometimesBrokenTask]):
    def load(self):
        for answer in ("raise", "paris", "rome"):
            yield SometimesBrokenTask(QuestionData(prompt=f"Say {answer}.", answer=answer), self.config.task)


def taskset(cls: type[vf.Taskset]) -> vf.Taskset:
    """The taskset with its default config (what `vf.load_taskset` builds for an id)."""
    return cls(vf.TasksetConfig(id=cls.__module__))
