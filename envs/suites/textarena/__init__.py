"""TextArena's single-player games as multi-turn rollgym environments, `textarena/<game>-v0`: the game's messages are
the user's, the model's reply is its move, the game's own reward scores the episode. Importing this room imports no
TextArena."""

from rollgym.envs.suites.textarena.games import GAMES, REFUSED, SUITE, env_id, register_games

__all__ = ["GAMES", "REFUSED", "SUITE", "env_id", "register_games"]
