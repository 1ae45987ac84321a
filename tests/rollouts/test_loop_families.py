"""The rollout loop with every model family: token-exact episodes in each family's own format."""

from __future__ import annotations

import pytest
from support import call_message, written_turn

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs import make
from rollgym.rollouts.history import history_costs
from rollgym.rollouts.loop import run_rollout
from rollgym.rollouts.policy import Policy
from rollgym.tokenization.families import FAMILIES

TASK = {"task_id": "calc-1", "question": "What is (2 + 3) * 4?", "answer": 20}
CALLS = [("add", {"a": 2, "b": 3}), ("multiply", {"a": 5, "b": 4}), ("submit", {"answer": 20})]
#: Families whose references never re-render a tool-calling episode (the others record the cost of `template`).
APPEND_ONLY = {"kimi-k2", "kimi-k2-thinking", "qwen3-coder", "glm-4.5", "glm-4.6", "lfm2"}


@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
async def test_calculator_episode_in_each_familys_format(family_tok, name):
    tok = family_tok(name)
    env = make("rollgym/Calculator-v0").unwrapped
    fam = next(f for f in FAMILIES if f.name == name)
    ids = [(fam.call_id_format or "call{index:05d}").format(index=0, name=n) for n, _ in CALLS]
    seen: list[list[int]] = []
    script: list[list[int]] = []

    def engine(prompt, sampling):
        seen.append(list(prompt))
        return script[len(seen) - 1]

    probe = await run_rollout(
        make("rollgym/Calculator-v0").unwrapped,
        Policy(engine=ScriptedEngine(lambda p, s: [tok.stop_token_ids[0]]), tokenizer=tok),
        TASK,
    )
    tools = probe.tools
    script += [written_turn(tok, call_message(n, i, **a), tools) for (n, a), i in zip(CALLS, ids, strict=True)]
    r = await run_rollout(env, Policy(engine=ScriptedEngine(engine), tokenizer=tok), TASK)
    assert r.error is None, r.error
    assert r.reward == 1.0 and [t.tool_calls[0].name for t in r.turns] == [n for n, _ in CALLS]
    view = r.token_view()
    assert [i for i, m in zip(view["completion_ids"], view["env_mask"], strict=True) if m] == sum(script, [])
    history, rerendered = list(r.initial_messages), []
    for k, turn in enumerate(r.turns):
        assert seen[k] == view["prompt_ids"] + view["completion_ids"][: turn.prompt_len - len(view["prompt_ids"])]
        rerendered.append(seen[k] == tok.prompt_ids(history, tools))
        history += [turn.message, *turn.env_messages]
    # Each prompt is the family's reference rendering of the conversation so far; where the reference re-renders
    # history (Qwen3 writes an empty <think> only in the newest turn), the rollout says what `template` would cost.
    if fam.reference != "template" or name in APPEND_ONLY:
        assert all(rerendered)
    cost = history_costs(r, tok)
    assert cost["keep"].samples == 1
    assert cost["template"].samples == 1 + sum(not ok for ok in rerendered[1:])
