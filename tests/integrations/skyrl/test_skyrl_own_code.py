"""SkyRL's own code consumes rollgym's rollouts: SkyRL 0.4.0 in its own Python 3.12 venv (.ci/trainers-up skyrl)
reads rows with its `PromptDataset`, batches them with `prepare_generator_input`, has rollgym's `RollgymGenerator`
answer, then validates, post-processes and tensorizes the output with its trainer's own steps and computes its GRPO
advantage and PPO policy loss (skyrl_side.py). Here the batch SkyRL built is checked, token by token, against the
rollouts rollgym recorded."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.trainer_venv import run_side

from rollgym.engines.default_model import smollm2_dir
from rollgym.rollouts.output import read_rollouts

MAX_GENERATE = 96


@pytest.fixture(scope="module")
def skyrl_batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("skyrl")
    work = tmp / "work"
    work.mkdir()
    side = Path(__file__).with_name("skyrl_side.py")
    batch = run_side("skyrl", side, [tmp / "out.json", work, smollm2_dir()], tmp / "out.json")
    rollouts = {r.id: r for p in batch["records"] for r in read_rollouts(p)}
    return batch, rollouts


def test_skyrls_tensors_hold_rollgyms_ids_masks_and_logprobs_token_by_token(skyrl_batch):
    batch, rollouts = skyrl_batch
    checked = 0
    for i, rid in enumerate(batch["rollout_ids"]):
        if rid is None or rollouts[rid].error is not None:
            continue
        view = rollouts[rid].token_view()
        response, prompt = view["completion_ids"][:MAX_GENERATE], view["prompt_ids"]
        n = len(response)
        # SkyRL's layout: the whole sequence left-padded, response-level tensors right-aligned
        assert batch["sequences"][i][-n:] == response
        assert batch["sequences"][i][-n - len(prompt) : -n] == prompt
        assert batch["loss_mask"][i][-n:] == [float(m) for m in view["env_mask"][:n]]
        assert not any(batch["loss_mask"][i][:-n])
        assert all(
            math.isclose(a, b, abs_tol=1e-6)
            for a, b in zip(batch["rollout_logprobs"][i][-n:], view["logprobs"][:n], strict=True)
        )
        checked += 1
    assert checked == 4
    tool_rows = batch["scripted_rows"]  # the scripted group; the model's own rows may stop or not
    assert len(tool_rows) == 2 and all(batch["raw"]["stop_reasons"][i] == "stop" for i in tool_rows)
    for i in tool_rows:  # a bridge of tool ids (mask 0) between two sampled turns
        mask = batch["raw"]["loss_masks"][i]
        assert mask[0] == 1 and 0 in mask and mask[-1] == 1
    assert len(set(batch["sessions"])) == 4 and len(batch["sessions"]) == 6  # one session per rollout, all turns
    metrics = batch["rollout_metrics"]
    assert metrics["rollgym/oldest_version"] == metrics["rollgym/newest_version"] == 5  # the client's weight_version


def test_skyrls_advantage_and_loss_read_the_rewards_and_the_sampling_logprobs(skyrl_batch):
    batch, _ = skyrl_batch
    rewards = [sum(row) for row in batch["rewards"]]
    tool_rows = batch["scripted_rows"]
    assert sorted(rewards[i] for i in tool_rows) == [0.0, 1.0]
    for i in tool_rows:  # SkyRL's GRPO: +-1/sqrt(2) over the response of the group's two samples
        expected = 0.7071 if rewards[i] == 1.0 else -0.7071
        for a, m in zip(batch["advantages"][i], batch["response_mask"][i], strict=True):
            assert math.isclose(a, expected if m else 0.0, abs_tol=1e-3)
    assert batch["sampled_tokens"] > 0 and batch["max_logprob_gap"] < 1e-3  # recomputation == sampling logprobs
    assert math.isfinite(batch["loss"])


def test_failed_rows_stay_as_masked_rows_with_reward_zero_and_stop_reason_error(skyrl_batch):
    batch, _ = skyrl_batch
    failed = [i for i, stop in enumerate(batch["raw"]["stop_reasons"]) if stop == "error"]
    assert len(failed) == 4  # two rows of an unknown environment, two of a task the Calculator refuses
    for i in failed:
        assert not any(batch["loss_mask"][i]) and not any(batch["rewards"][i]) and not any(batch["advantages"][i])
    assert batch["rollout_metrics"]["rollgym/failed"] == 4.0
