"""A TextArena game as a rollgym environment: the game's prompt is the user message, each reply of the model is one
move (`env.step(text)`, the game parsing its `[...]`), the game's messages after it the next user message; the game's
own reward (`close()`'s rewards for player 0) scores the episode."""

from __future__ import annotations

import functools
import math
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rollgym.envs.core import Env, ScorerError
from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.core.suites import require_installed
from rollgym.envs.suites.textarena.games import REFUSED, SUITE, env_id
from rollgym.errors import UsageError


class TextArenaUnavailableError(UsageError):
    """A TextArena game rollgym refuses here; the message says why."""


class GameTask(BaseModel):
    """A task row: the seed the game is reset with."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = ""
    game: str | None = None
    seed: int = Field(default=0, ge=0)


def unwrapped(game_env: Any) -> Any:
    """The game under TextArena's default wrappers (whose observation wrapper repeats the whole history each turn)."""
    while hasattr(game_env, "env"):
        game_env = game_env.env
    return game_env


def game_text(observations: list[tuple[Any, ...]]) -> str:
    """The game's new messages to the player, one after another, leaving out the echo of the player's own move (some
    games of textarena 0.7.4 put the tuple's fields in another order: each is found by its type)."""
    texts = []
    for entry in observations:
        text = next((part for part in entry if isinstance(part, str)), "")
        kind = next((part.name for part in entry if isinstance(part, Enum)), "")
        sender = next((part for part in entry if isinstance(part, int) and not isinstance(part, Enum)), None)
        if kind != "PLAYER_ACTION" and sender != 0:
            texts.append(text)
    return "\n".join(texts)


class TextArenaEnv(Env):
    """One TextArena game (`game`, set on the per-game subclass), player 0 alone; the game ends the episode."""

    game: str = ""

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """`n` games, reset with seeds `seed` ... `seed + n - 1`."""
        return [{"game": cls.game, "seed": seed + i, "task_id": f"{cls.game}-{seed + i}"} for i in range(n)]

    def __init__(self, max_turns: int | None = None) -> None:
        super().__init__(max_turns=max_turns)
        self.arena: Any = None
        self.rewards: dict[int, float] | None = None
        self.game_info: dict[str, Any] = {}

    async def setup(self, task: dict[str, Any] | None):
        import textarena

        try:
            row = GameTask.model_validate(task or {})
        except ValidationError as exc:
            raise InvalidTaskError(f"a TextArena task row ({self.game}): {exc}") from None
        if row.game not in (None, self.game):
            raise InvalidTaskError(f"the task names game {row.game!r}, but this is the {self.game!r} environment")
        self.arena = unwrapped(textarena.make(self.game))
        self.arena.reset(num_players=1, seed=row.seed)
        self.rewards, self.game_info = None, {}
        _, observations = self.arena.get_observation()
        task_id = row.task_id or f"{self.game}-{row.seed}"
        return [{"role": "user", "content": game_text(observations)}], {"task_id": task_id, "game": self.game}

    async def on_text_reply(self, message: dict):
        """The reply is the move; the game's answer is the next user message, or the game is over."""
        done, _ = self.arena.step(message.get("content") or "")
        if done:
            rewards, info = self.arena.close()
            self.rewards, self.game_info = dict(rewards or {}), dict((info or {}).get(0, {}))
            return [], True
        _, observations = self.arena.get_observation()
        return [{"role": "user", "content": game_text(observations) or "(the game said nothing)"}], False

    async def compute_reward(self):
        if self.rewards is None:  # the caller's limits ended it before the game did
            return 0.0, {"finished": 0.0}
        reward = self.rewards.get(0)
        if not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise ScorerError(f"TextArena's {self.game} gave player 0 the reward {reward!r}")
        invalid = float(bool(self.game_info.get("invalid_move")))
        return float(reward), {"finished": 1.0, "invalid_move": invalid}


@functools.cache
def env_class(game: str) -> type[TextArenaEnv]:
    name = "".join(ch for ch in game.removesuffix("-v0").title() if ch.isalnum()) + "GameEnv"
    made = type(name, (TextArenaEnv,), {"game": game, "__module__": __name__, "__doc__": TextArenaEnv.__doc__})
    assert issubclass(made, TextArenaEnv)
    return made


def make_game_env(game: str, **kwargs: Any) -> TextArenaEnv:
    """gymnasium's entry point of every `textarena/...` id: the game's environment; a refused game raises
    `TextArenaUnavailableError` with the reason, an absent TextArena `SuiteNotInstalledError` naming the extra."""
    if game in REFUSED:
        raise TextArenaUnavailableError(f"{env_id(game)!r} is not available: {REFUSED[game]}")
    require_installed(env_id(game), SUITE)
    return env_class(game)(**kwargs)
