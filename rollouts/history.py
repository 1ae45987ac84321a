"""The run-level choice for templates that rewrite history (Qwen3, DeepSeek R1, GPT-OSS and Nemotron drop earlier
reasoning; Mistral moves its tool list): `keep`, where each turn's prompt extends the previous one exactly, so the
model sees its own earlier turns as it sampled them and a rollout is one training sample; or `template`, where each
turn's prompt is what the template renders, so a rewrite starts a new sample. `history_costs` says what both
choices make of a rollout (samples and tokens): a `template` rollout records it as it ends (it costs a bridge per
turn); for `keep` rollouts `rollgym history-cost RUN_DIR` computes it afterwards, since it costs a full render per
turn, which would multiply the loop's own cost per turn by 2 to 4 if every rollout paid it.
"""

from __future__ import annotations

from typing import Any

from rollgym.errors import UsageError
from rollgym.rollouts.records import HistoryCost, Rollout
from rollgym.tokenization import ChatTokenizer, TokenizationError

HISTORY_MODES = ("keep", "template")


def check_history(mode: Any) -> str:
    """`mode` when it is a history choice; a `UsageError` naming both otherwise."""
    if mode not in HISTORY_MODES:
        raise UsageError(f"history must be 'keep' (extend each prompt exactly) or 'template' (re-render), got {mode!r}")
    return mode


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading ids `a` and `b` share."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def history_costs(rollout: Rollout, tokenizer: ChatTokenizer) -> dict[str, HistoryCost]:
    """Samples and tokens of `rollout` under `keep` and under `template`, from its own turns: `keep` by bridging
    (cheap), `template` by rendering every turn's prompt (a full render per turn, as that choice does)."""
    tools = rollout.tools or None
    if rollout.history == "template":
        actual = rollout.samples()
        template = HistoryCost(
            samples=len(actual), tokens=sum(len(s["prompt_ids"]) + len(s["completion_ids"]) for s in actual)
        )
        traj = tokenizer.start(rollout.initial_messages, tools)
        for k, turn in enumerate(rollout.turns):
            traj.add_completion(turn.completion_ids, None, "stop")
            if k + 1 < len(rollout.turns):
                traj.add_messages(turn.env_messages)
        keep = HistoryCost(samples=1, tokens=len(traj))
        return {"keep": keep, "template": template}
    view = rollout.token_view()
    keep = HistoryCost(samples=1, tokens=len(view["prompt_ids"]) + len(view["completion_ids"]))
    seq, samples, tokens = list(rollout.prompt_ids), 1, 0
    messages = list(rollout.initial_messages)
    for k, turn in enumerate(rollout.turns):
        seq += turn.completion_ids
        messages += [turn.message, *turn.env_messages]
        if k + 1 == len(rollout.turns):
            break
        fresh = tokenizer.prompt_ids(messages, tools)
        if fresh[: len(seq)] != seq:  # the template re-rendered what the model saw: a new sample
            tokens += len(seq)
            samples += 1
        seq = fresh
    return {"keep": keep, "template": HistoryCost(samples=samples, tokens=tokens + len(seq))}


def record_history_costs(rollout: Rollout, tokenizer: ChatTokenizer | None) -> None:
    """Fill `rollout.history_cost` of a `template` rollout (a conversation the template cannot render again leaves
    it empty); `keep` rollouts get it from `rollgym history-cost`."""
    if tokenizer is None or rollout.history != "template" or not rollout.token_exact or not rollout.turns:
        return
    try:
        rollout.history_cost = history_costs(rollout, tokenizer)
    except TokenizationError:
        rollout.history_cost = {}
