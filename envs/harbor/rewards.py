"""Harbor's reward files, read by Harbor 0.25's rules (`verifier/verifier.py`): `reward.json` (an object of finite
numbers) when present, else `reward.txt` (one finite number); anything else is a `RewardFileError` saying why."""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, Field

from rollgym.envs.harbor.errors import RewardFileError

VERIFIER_DIR = "/logs/verifier"
REWARD_TXT = f"{VERIFIER_DIR}/reward.txt"
REWARD_JSON = f"{VERIFIER_DIR}/reward.json"


class Rewards(BaseModel):
    """What a verification scored: the training reward and every named reward (reward.json's keys, or `reward`)."""

    reward: float
    components: dict[str, float] = Field(default_factory=dict)


def _finite(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RewardFileError(f"non-numeric reward {value!r} in {where}")
    if not math.isfinite(value):
        raise RewardFileError(f"non-finite reward {value!r} in {where}")
    return float(value)


def parse_reward_txt(data: bytes) -> Rewards:
    """One finite number (surrounding whitespace allowed, as Python's `float` reads it)."""
    if not data:
        raise RewardFileError(f"the reward file {REWARD_TXT} is empty")
    try:
        value = float(data.decode("utf-8", errors="replace"))
    except ValueError:
        raise RewardFileError(f"{REWARD_TXT} does not hold one number: {data[:200]!r}") from None
    reward = _finite(value, REWARD_TXT)
    return Rewards(reward=reward, components={"reward": reward})


def parse_reward_json(data: bytes) -> Rewards:
    """A JSON object of finite numbers; the training reward is its `reward` key when present, else the mean of its
    values (rollgym's choice; Harbor keeps the object as it is)."""
    if not data:
        raise RewardFileError(f"the reward file {REWARD_JSON} is empty")
    try:
        found = json.loads(data)
    except ValueError:
        raise RewardFileError(f"{REWARD_JSON} is not JSON: {data[:200]!r}") from None
    if not isinstance(found, dict) or not found:
        raise RewardFileError(f"{REWARD_JSON} is not a non-empty JSON object of numbers: {data[:200]!r}")
    components = {str(k): _finite(v, f"{REWARD_JSON} ({k})") for k, v in found.items()}
    reward = components["reward"] if "reward" in components else sum(components.values()) / len(components)
    return Rewards(reward=reward, components=components)
