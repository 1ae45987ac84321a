"""Harbor 0.25's reward-file rules (`verifier/verifier.py`): one finite number, or an object of finite numbers; an
empty, malformed or non-finite file is a `RewardFileError` saying why, never a reward of 0."""

from __future__ import annotations

import pytest

from rollgym.envs.harbor.errors import RewardFileError
from rollgym.envs.harbor.rewards import parse_reward_json, parse_reward_txt


def test_reward_txt_is_one_finite_number():
    assert parse_reward_txt(b"1\n").reward == 1.0
    assert parse_reward_txt(b" 0.25 ").components == {"reward": 0.25}


@pytest.mark.parametrize(
    ("data", "why"),
    [(b"", "empty"), (b"yes", "one number"), (b"1 2", "one number"), (b"nan", "non-finite"), (b"inf", "non-finite")],
)
def test_a_bad_reward_txt_says_why(data, why):
    with pytest.raises(RewardFileError, match=why):
        parse_reward_txt(data)


def test_reward_json_reward_key_is_the_training_reward_and_all_keys_are_components():
    got = parse_reward_json(b'{"reward": 0.5, "add": 1, "mul": 0}')
    assert got.reward == 0.5 and got.components == {"reward": 0.5, "add": 1.0, "mul": 0.0}


def test_reward_json_without_a_reward_key_is_scored_by_the_mean_of_its_values():
    assert parse_reward_json(b'{"a": 1, "b": 0}').reward == 0.5


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (b"{", "not JSON"),
        (b"[1]", "object"),
        (b"{}", "object"),
        (b'{"reward": "1"}', "non-numeric"),
        (b'{"reward": true}', "non-numeric"),
        (b'{"reward": NaN}', "non-finite"),
        (b'{"reward": 1e999}', "non-finite"),
    ],
)
def test_a_bad_reward_json_says_why(data, why):
    with pytest.raises(RewardFileError, match=why):
        parse_reward_json(data)
