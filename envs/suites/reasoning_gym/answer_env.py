"""A reasoning-gym generator as a rollgym environment: the question as the user message, the model's last
`<answer>...</answer>` as its answer, reward = reasoning-gym's own `score_answer`; the calculator variant adds a tool."""

from __future__ import annotations

import functools
import math
from typing import Any

from rollgym.envs.core import Env, ScorerError, tool
from rollgym.envs.core.suites import require_installed
from rollgym.envs.suites.reasoning_gym.expression import evaluate
from rollgym.envs.suites.reasoning_gym.generators import SUITE, env_id
from rollgym.envs.suites.reasoning_gym.rows import GeneratorRow, dataset_of, entry_of, parse_row

CALCULATOR_PROMPT = (
    "You have a `calculate` tool that evaluates arithmetic expressions (Python syntax: + - * / // % ** and "
    "parentheses); use it for every computation, then give the final answer."
)


class ReasoningGymEnv(Env):
    """One reasoning-gym generator (`generator`, set on the per-generator subclass); a task row is a
    `GeneratorRow`; `config` and `level` (make kwargs) fill the rows that do not say theirs."""

    generator: str = ""
    max_turns = 1  # one answer; a tool call in this variant is answered as an unknown tool, then the episode ends

    def __init__(
        self,
        config: dict[str, Any] | None = None,
        level: int | None = None,
        system_prompt: str = "default",
        max_turns: int | None = None,
    ) -> None:
        """`system_prompt`: a key of reasoning-gym's `SYSTEM_PROMPTS` (`default`, `DeepSeekZero`, `simple`, ...) or
        the text itself."""
        super().__init__(max_turns=max_turns)
        self.defaults = {"config": config, "level": level}
        self.system_prompt = system_prompt
        self.row: GeneratorRow | None = None
        self.entry: dict[str, Any] = {}
        self.reply: str | None = None

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """Rows 0 ... n-1 of the generator's dataset of size `n` drawn with `seed`."""
        rows = [GeneratorRow(generator=cls.generator, seed=seed, size=max(n, 1), index=i) for i in range(n)]
        return [{**row.model_dump(exclude={"config", "level"}), "task_id": row.stable_id()} for row in rows]

    def prompt(self) -> str:
        """The system prompt: reasoning-gym's own, asking for the answer in `<answer>` tags."""
        from reasoning_gym.utils import SYSTEM_PROMPTS

        return SYSTEM_PROMPTS.get(self.system_prompt, self.system_prompt)

    async def setup(self, task: dict[str, Any] | None):
        self.row = parse_row(task or {}, self.generator, self.defaults)
        self.entry = entry_of(self.row)
        self.reply = None
        messages = [{"role": "system", "content": self.prompt()}, {"role": "user", "content": self.entry["question"]}]
        return messages, {"task_id": self.row.stable_id(), "generator": self.generator}

    async def on_text_reply(self, message: dict):
        """A reply without a tool call ends the episode; it is the answer's text."""
        self.reply = message.get("content") or ""
        return [], True

    def extracted_answer(self) -> str | None:
        """The last `<answer>...</answer>` of the reply, stripped (reasoning-gym's `extract_answer`), or None."""
        from reasoning_gym.utils import extract_answer

        return extract_answer(self.reply) if self.reply is not None else None

    def score(self, answer: str | None) -> float:
        """reasoning-gym's own score of `answer` for this entry."""
        assert self.row is not None, "setup() first"
        return dataset_of(self.row).score_answer(answer, self.entry)

    async def compute_reward(self):
        answer = self.extracted_answer()
        try:
            score = float(self.score(answer))
        except Exception as exc:  # the suite's scorer failing is the rollout's error, not the batch's
            raise ScorerError(
                f"reasoning-gym's score_answer ({self.generator}) raised {type(exc).__name__}: {exc}"
            ) from exc
        if not math.isfinite(score):
            raise ScorerError(f"reasoning-gym's score_answer ({self.generator}) returned {score}")
        return score, {"score": score, "answered": float(answer is not None)}


class CalculatorReasoningGymEnv(ReasoningGymEnv):
    """The generator with a `calculate` tool; the episode ends at the first reply without a tool call."""

    max_turns = None  # the caller's `Limits` bound the turns

    def prompt(self) -> str:
        return f"{super().prompt()}\n{CALCULATOR_PROMPT}"

    @tool(parallel=True)
    async def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression and return its value.

        Args:
            expression: numbers, parentheses and + - * / // % ** << >> & | ^ ~ in Python syntax, e.g. (17 * 3) - 4
        """
        value = evaluate(expression)
        return f"{value} (hex {value:#x})" if isinstance(value, int) and "0x" in expression.lower() else str(value)


@functools.cache
def env_class(generator: str, calculator: bool) -> type[ReasoningGymEnv]:
    """The environment class of one generator (its `default_tasks` know which), one per process."""
    base = CalculatorReasoningGymEnv if calculator else ReasoningGymEnv
    name = "".join(part.title() for part in generator.split("_")) + ("CalculatorEnv" if calculator else "Env")
    made = type(name, (base,), {"generator": generator, "__module__": __name__, "__doc__": base.__doc__})
    assert issubclass(made, ReasoningGymEnv)
    return made


def make_answer_env(generator: str, calculator: bool = False, **kwargs: Any) -> ReasoningGymEnv:
    """gymnasium's entry point of every `reasoning_gym/...` id: the generator's environment, or
    `SuiteNotInstalledError` naming the extra when reasoning-gym is absent."""
    require_installed(env_id(generator, calculator=calculator), SUITE)
    return env_class(generator, calculator)(**kwargs)
