"""TextArena's single-player games through rollgym's loop: scripted policies win Tower of Hanoi and Guess The Number
and are scored by the game's own reward, token-exact; `rg.check_env` on every catalogued game; the games that
cannot run here are refused with the reason."""

from __future__ import annotations

import re

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.suites.textarena import REFUSED, env_id
from rollgym.envs.suites.textarena.game_env import TextArenaUnavailableError
from rollgym.limits import Limits

pytest.importorskip("textarena", reason="TextArena is not installed: pip install 'rollgym[textarena]'")

HANOI = ["[A C]", "[A B]", "[C B]", "[A C]", "[B A]", "[B C]", "[A C]"]  # 3 disks from A to C in 7 moves


def episode(prompt: str) -> list[str]:
    """The user messages of a decoded ChatML prompt, in order."""
    return re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", prompt, re.S)


def assert_token_exact(rollout) -> None:
    view = rollout.token_view()
    full = view["prompt_ids"] + view["completion_ids"]
    for turn in rollout.turns:
        assert full[turn.prompt_len : turn.prompt_len + len(turn.completion_ids)] == turn.completion_ids
    assert rollout.token_exact


async def test_tower_of_hanoi_solved_in_seven_moves_scores_the_games_reward(tool_tok, say):
    def reply(prompt_ids, sampling):
        return say.text(f"I move {HANOI[len(episode(tool_tok.decode(prompt_ids))) - 1]}")

    (rollout,) = await rg.run_rollouts(
        env_id("TowerOfHanoi-v0"),
        [{"seed": 0}],
        rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok),
        limits=Limits(max_turns=10),
    )
    assert rollout.error is None and rollout.reward == 1.0 and len(rollout.turns) == 7
    assert rollout.reward_components == {"finished": 1.0, "invalid_move": 0.0}
    assert "Tower of Hanoi with 3 disks" in rollout.messages()[0]["content"]
    assert_token_exact(rollout)


async def test_guess_the_number_won_by_bisection(tool_tok, say):
    def reply(prompt_ids, sampling):
        low, high = 1, 20
        prompt = tool_tok.decode(prompt_ids)
        made = [int(g) for g in re.findall(r"<\|im_start\|>assistant\nMy guess: \[(\d+)\]", prompt)]
        for g, message in zip(made, episode(prompt)[1:], strict=True):
            low, high = (g + 1, high) if "higher" in message else (low, g - 1)
        return say.text(f"My guess: [{(low + high) // 2}]")

    rollouts = await rg.run_rollouts(
        env_id("GuessTheNumber-v0"),
        [{"seed": s} for s in (3, 4, 5)],
        rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok),
        limits=Limits(max_turns=10),
    )
    for rollout in rollouts:
        assert rollout.error is None and rollout.reward == 1.0, rollout.messages()
        assert all("higher" in m["content"] or "lower" in m["content"] for m in rollout.messages()[2::2])
        assert_token_exact(rollout)


@pytest.mark.parametrize("game", sorted(REFUSED))
def test_a_game_that_cannot_run_here_is_refused_with_the_reason(game):
    with pytest.raises(TextArenaUnavailableError, match=re.escape(REFUSED[game])):
        rg.make(env_id(game))
