"""OpenRLHF's own code consumes rollgym's rollouts: OpenRLHF 0.11.2 in its own venv (.ci/trainers-up openrlhf) loads
rollgym's agent executor with its own `_load_agent_executor`, runs it in its `RolloutRayActor` under
`SamplesGenerator.generate_samples` over rows its `PromptDataset` read, then batches the Experiences, computes its
GRPO advantage and its policy loss (openrlhf_side.py). Here what OpenRLHF built is checked, token by token, against
the rollouts rollgym recorded: OpenRLHF's view is shifted by one (position j is token j + 1)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from support.trainer_venv import run_side

from rollgym.engines.default_model import smollm2_dir
from rollgym.rollouts.output import read_rollouts

MAX_LEN = 640


@pytest.fixture(scope="module")
def openrlhf_batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("openrlhf")
    work = tmp / "work"
    work.mkdir()
    side = Path(__file__).with_name("openrlhf_side.py")
    return run_side("openrlhf", side, [tmp / "out.json", work, smollm2_dir()], tmp / "out.json", cwd=work)


def recorded(paths):
    return [r for p in paths for r in read_rollouts(p)]


def rollout_of(row, rollouts):
    """The recorded rollout whose ids OpenRLHF's sequence is (or starts, when OpenRLHF's max_len cut it)."""
    for r in rollouts:
        if r.error is None:
            view = r.token_view()
            ids = view["prompt_ids"] + view["completion_ids"]
            if ids[: len(row["sequence"])] == row["sequence"]:
                return r
    return None


def shifted_view(rollout, length):
    """rollgym's env_mask and logprobs as OpenRLHF's Experience holds them: position j is token j + 1."""
    view = rollout.token_view()
    n = len(view["prompt_ids"])
    mask = ([0] * n + view["env_mask"])[1:length]
    logprobs = ([0.0] * n + view["logprobs"])[1:length]
    return mask, logprobs


def has_bridge(mask):
    """Two runs of sampled ids with environment ids (mask 0) between them."""
    ones = [j for j, m in enumerate(mask) if m]
    return bool(ones) and 0 in mask[ones[0] : ones[-1]]


def test_openrlhfs_experiences_hold_rollgyms_ids_mask_and_logprobs_token_by_token(openrlhf_batch):
    batch = openrlhf_batch
    rollouts = recorded(batch["records"])
    assert batch["action_mask_shape"] == batch["rollout_log_probs_shape"]
    checked, tool_rows = 0, 0
    for row in batch["rows"]:
        if row["info"]["rollgym/failed"]:
            continue
        rollout = rollout_of(row, rollouts)
        assert rollout is not None, "an Experience whose ids no recorded rollout has"
        view = rollout.token_view()
        assert row["sequence"] == view["prompt_ids"] + view["completion_ids"]  # nothing cut at max_len 640
        mask, logprobs = shifted_view(rollout, len(row["sequence"]))
        assert row["action_mask"] == mask
        assert all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(row["rollout_log_probs"], logprobs, strict=True))
        for j, m in enumerate(row["action_mask"]):  # each masked position is a sampled id and its logprob
            if m:
                k = j + 1 - len(view["prompt_ids"])
                assert row["sequence"][j + 1] == view["completion_ids"][k] and view["env_mask"][k] == 1
        assert row["reward"] == rollout.reward and row["truncated"] == rollout.truncated
        tool_rows += has_bridge(row["action_mask"])
        checked += 1
    assert checked == 4
    assert tool_rows >= 2  # the scripted episodes: a bridge of tool ids (mask 0) between two sampled runs


def test_openrlhfs_advantage_loss_and_log_probs_read_the_rewards_and_the_sampling_logprobs(openrlhf_batch):
    batch = openrlhf_batch
    scripted = [i for i, r in enumerate(batch["rows"]) if json.loads(r["label"])["task_id"] == "calc-3-1"]
    assert sorted(batch["rows"][i]["reward"] for i in scripted) == [0.0, 1.0]
    for i in scripted:  # group_norm: (r - mean) / std over the group of two, on every action position
        expected = 0.7071 if batch["rows"][i]["reward"] == 1.0 else -0.7071
        row = batch["rows"][i]
        for a, m in zip(batch["advantages"][i], row["action_mask"], strict=False):
            if m:
                assert math.isclose(a, expected, abs_tol=1e-3)
    assert sorted(batch["index"]) == list(range(len(batch["rows"])))
    # OpenRLHF's log_probs_from_logits over its shifted sequences recomputes what SmolLM2 sampled
    assert batch["sampled_tokens"] > 0 and batch["max_logprob_gap"] < 1e-3
    assert math.isfinite(batch["loss"]) and math.isfinite(batch["ppo_kl"])
    # every turn asked for at most what was left of max_len, as OpenRLHF's multi-turn executor does
    assert all(r["prompt_len"] + r["max_tokens"] <= MAX_LEN for r in batch["requests"])
    assert any(r["prompt_len"] + r["max_tokens"] == batch["short_len"] for r in batch["requests"])


def test_failed_rows_have_no_action_and_reward_zero(openrlhf_batch):
    batch = openrlhf_batch
    failed = [r for r in batch["rows"] if r["info"]["rollgym/failed"]]
    assert len(failed) == 4  # two rows of an unknown environment, two of a task the Calculator refuses
    assert sum("NoSuchEnv" in r["label"] for r in failed) == 2
    for i, row in enumerate(batch["rows"]):
        if row["info"]["rollgym/failed"]:
            assert not any(row["action_mask"]) and row["reward"] == 0.0 and len(row["sequence"]) > 0
            assert not any(a for a, m in zip(batch["advantages"][i], row["action_mask"], strict=False) if m)
    errored = [r for r in recorded(batch["records"]) if r.error is not None]
    assert len(errored) == 2 and all("answer" in r.error.message for r in errored)


def test_a_rollout_longer_than_max_len_is_cut_as_openrlhf_cuts_and_flagged(openrlhf_batch):
    batch = openrlhf_batch
    rollouts = recorded(batch["short_records"])
    assert len(batch["short_rows"]) == 2 and len(rollouts) == 2
    for row in batch["short_rows"]:
        assert len(row["sequence"]) <= batch["short_len"] and row["truncated"] is True
        assert row["info"]["rollgym/truncated"] == 1.0
        rollout = rollout_of(row, rollouts)
        assert rollout is not None and rollout.truncated
        mask, logprobs = shifted_view(rollout, len(row["sequence"]))
        assert row["action_mask"] == mask and any(mask)
