"""Rollouts the ART room is checked on: a GRPO group of two scripted Calculator episodes with a tool turn each (one
right answer, one wrong: advantages ±1), one stamped with weights versions, one whose history a template rewrote
(two samples: two ART histories) and one the Calculator refuses (failed)."""

from __future__ import annotations

import asyncio

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.records import Resample, Rollout


def scripted(tool_tok, say, tasks, n: int, wrong_every: int = 0) -> list[Rollout]:
    """Each episode: `add` (a tool turn), then `submit`; every `wrong_every`-th episode submits a wrong answer."""

    def script(prompt, sampling):
        calls = script.calls = getattr(script, "calls", 0) + 1
        episode = (calls - 1) // 2
        task = tasks[episode // n % len(tasks)]
        if calls % 2:
            return say.call("add", a=1, b=2)
        wrong = wrong_every and episode % wrong_every == wrong_every - 1
        return say.call("submit", answer=str(int(task["answer"]) + 1) if wrong else task["answer"])

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=n, concurrency=1))


def art_rollouts(tool_tok, say) -> dict[str, Rollout]:
    """`right` and `wrong` (one group), `versions` (turns sampled by versions 3 and 5), `template` (two samples),
    `failed` (a task without an answer)."""
    right, wrong = scripted(tool_tok, say, CalculatorEnv.default_tasks(1, seed=11), n=2, wrong_every=2)
    versions, template = scripted(tool_tok, say, CalculatorEnv.default_tasks(2, seed=12), n=1)
    versions.turns[0].policy_version, versions.turns[1].policy_version = 3, 5
    first = template.turns[0]
    template.turns[1].resample = Resample(shared=len(template.prompt_ids) - 4, ids=list(first.bridge_ids[-6:]))
    template.history = "template"
    (failed,) = scripted(tool_tok, say, [{"task_id": "no-answer", "question": "What is 1 + 1?"}], n=1)
    assert right.reward == 1.0 and wrong.reward == 0.0 and right.group_id == wrong.group_id
    assert failed.error is not None
    return {"right": right, "wrong": wrong, "versions": versions, "template": template, "failed": failed}
