"""rollgym's reward is reasoning-gym's own score: on 50 generated rows of each sampled family, for the gold answer,
near misses and wrong answers, the environment's reward equals `score_answer(extract_answer(reply), entry)` computed
by reasoning-gym alone on a dataset it builds itself."""

from __future__ import annotations

import pytest

import rollgym as rg

ROWS = 50
SEED = 2026
#: a family or two per reasoning-gym category, exact-match and partial-credit scorers alike
FAMILIES = [
    "basic_arithmetic",  # arithmetic, exact
    "chain_sum",  # arithmetic, decimal tolerance
    "fraction_simplification",  # arithmetic, partial credit
    "word_sorting",  # algorithmic
    "spell_backward",  # algorithmic
    "letter_counting",  # algorithmic
    "knights_knaves",  # logic
    "countdown",  # games: any expression reaching the target scores
    "simple_equations",  # algebra
    "family_relationships",  # graphs
    "propositional_logic",  # logic: no gold answer, the scorer checks the proposition
]


def replies(gold: str | None, other: str) -> list[str]:
    """What a model might write: the gold answer (padded, in prose), a near miss, another row's answer, no tags."""
    found = [f"<answer>{other}</answer>", "<answer></answer>", "I think the answer is 42."]
    if gold is not None:
        found += [
            f"<answer>{gold}</answer>",
            f"Let me think.\n<answer> {gold} </answer>",
            f"<answer>wrong</answer> then <answer>{gold}</answer>",
            f"<answer>{gold[:-1]}</answer>",
            f"<answer>{gold}0</answer>",
        ]
    return found


@pytest.mark.parametrize("generator", FAMILIES)
def test_the_reward_is_reasoning_gyms_own_score(generator):
    import reasoning_gym
    from reasoning_gym.utils import extract_answer

    own = reasoning_gym.create_dataset(generator, seed=SEED, size=ROWS)  # reasoning-gym alone, no rollgym
    env = rg.make(f"reasoning_gym/{generator}-v0").unwrapped
    rewards = []
    for index in range(ROWS):
        entry = own[index]
        other = own[(index + 1) % ROWS]["answer"] or "x"
        for reply in replies(entry["answer"], other):
            env.reset(options={"task": {"seed": SEED, "size": ROWS, "index": index}})
            assert env.entry["question"] == entry["question"]
            _, reward, terminated, _, info = env.step({"role": "assistant", "content": reply})
            expected = float(own.score_answer(extract_answer(reply), entry))
            assert terminated and "error" not in info
            assert reward == expected, (generator, index, reply, reward, expected)
            rewards.append(reward)
    env.close()
    assert len(rewards) >= ROWS * 3
    if own[0]["answer"] is not None:  # the comparison covers right and wrong answers, not one score throughout
        assert (
            max(rewards) == pytest.approx(1.0) and min(rewards) < 1.0
        )  # spell_backward scores "gold+0" 1.0000000000000002
