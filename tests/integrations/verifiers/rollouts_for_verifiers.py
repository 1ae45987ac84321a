"""Rollouts the verifiers room is checked on: scripted Calculator episodes with tool turns (multi-turn masks), a
failed one, one stamped with weights versions, one whose history a template rewrote (two samples)."""

from __future__ import annotations

import asyncio

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.records import Resample, Rollout


def calculator_rollouts(tool_tok, say, tasks) -> list[Rollout]:
    """Each task: `add` (a tool turn), then `submit` with the right answer."""

    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        task = tasks[(n - 1) // 2 % len(tasks)]
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=task["answer"])

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))


def broken_rollout(tool_tok, say) -> Rollout:
    """A rollout whose engine fails on its second turn, after the environment answered the first."""

    def script(prompt, sampling):
        script.calls = getattr(script, "calls", 0) + 1
        if script.calls > 1:
            raise ConnectionError("the server went away")
        return say.call("add", a=1, b=2)

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.5), tokenizer=tool_tok)
    tasks = CalculatorEnv.default_tasks(1, seed=5)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))[0]


def varied_rollouts(tool_tok, say) -> dict[str, Rollout]:
    """One of each kind: `tools` (two turns), `versions` (turns sampled by versions 3 and 5), `template` (its second
    turn's prompt rewritten: two samples), `failed` (a task the Calculator refuses), `broken` (the engine failed on
    the second turn)."""
    tools, versions, template = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(3))
    versions.turns[0].policy_version, versions.turns[1].policy_version = 3, 5
    first = template.turns[0]
    template.turns[1].resample = Resample(shared=len(template.prompt_ids) - 4, ids=list(first.bridge_ids[-6:]))
    template.history = "template"
    failed = calculator_rollouts(tool_tok, say, [{"task_id": "no-answer", "question": "What is 1 + 1?"}])[0]
    broken = broken_rollout(tool_tok, say)
    assert failed.error is not None and broken.error is not None and len(broken.turns) == 1
    return {"tools": tools, "versions": versions, "template": template, "failed": failed, "broken": broken}
