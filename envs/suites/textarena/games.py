"""The TextArena games rollgym catalogues, their ids and their registration, by name (listing the catalogue imports
no TextArena): the single-player board and puzzle games of textarena 0.7.4 that run offline; the ones that cannot are
registered too, and refused by `make` with the reason."""

from __future__ import annotations

from rollgym.envs.core.registration import register_env
from rollgym.envs.core.suites import Suite, register_suite_env

SUITE = Suite(name="textarena", package="textarena", module="textarena", extra="textarena")
NAMESPACE = "textarena"
ENTRY_POINT = "rollgym.envs.suites.textarena.game_env:make_game_env"

#: textarena 0.7.4's single-player games whose `reset(num_players=1)` runs with no network and no model
GAMES = (
    "2048-v0", "Bandit-v0", "Blackjack-v0", "Countdown-v0", "Crosswords-v0", "Cryptarithm-v0", "FifteenPuzzle-v0",
    "FrozenLake-v0", "GuessTheNumber-v0", "LightsOut-v0", "LogicPuzzle-v0", "Mastermind-v0", "Minesweeper-v0",
    "PegJump-v0", "RushHour-v0", "Secretary-v0", "Set-v0", "Slitherlink-v0", "Sokoban-v0", "Sudoku-v0",
    "ThreeCardMonte-v0", "TowerOfHanoi-v0",
)  # fmt: skip

_NLTK = "it reads NLTK's `words` corpus, which NLTK downloads at first use (no network here)"
_MODEL = "its other player is a hosted model (OpenRouter, an API key and the network)"
#: single-player games textarena 0.7.4 has that rollgym refuses, and why
REFUSED = {
    "Hangman-v0": _NLTK,
    "SpellingBee-v0": _NLTK,
    "WordLadder-v0": _NLTK,
    "WordSearch-v0": _NLTK,
    "Wordle-v0": _NLTK,
    "GuessWho-v0": _MODEL,
    "TwentyQuestions-v0": _MODEL,
    "Klondike-v0": "textarena 0.7.4's module for it does not import (a SyntaxError in its env.py)",
    "BabyAiText-v0": "it needs the `gym` package (not gymnasium), which textarena does not install",
}


def env_id(game: str) -> str:
    """The environment id of a game: `textarena/<game id>`, e.g. `textarena/Sudoku-v0`."""
    return f"{NAMESPACE}/{game}"


def register_games() -> None:
    """Register every catalogued game's id, and the refused ones' outside the catalogue (`make` refuses them with the
    reason, once textarena is there)."""
    for game in GAMES:
        register_suite_env(SUITE, env_id(game), ENTRY_POINT, game=game)
    for game in REFUSED:
        register_env(env_id(game), ENTRY_POINT, game=game)
