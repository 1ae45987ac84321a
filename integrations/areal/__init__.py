"""AReaL, in one room (areal 1.0.4, which pins torch < 2.11): rollgym samples as the trajectory dict AReaL's
workflows return (`rollgym export --format areal`), following AReaL's field contract."""

from rollgym.integrations.areal.episode_tensors import EPISODE_KEYS, episode_rows, episode_tensors

__all__ = ["EPISODE_KEYS", "episode_rows", "episode_tensors"]
