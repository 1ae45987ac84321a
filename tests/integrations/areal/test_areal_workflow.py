"""AReaL's live hook with AReaL's own code: rollgym's `RollgymWorkflow` runs in AReaL 1.0.4's venv
(.ci/trainers-up areal) as a real `RolloutWorkflow`, sampling through AReaL's `InferenceEngine.agenerate` with AReaL's
own `ModelRequest`/`ModelResponse` (areal_side.py: the real SmolLM2-135M, and a scripted tool-calling group whose
weights version moves between turns); AReaL's `check_trajectory_format` and `concat_padded_tensors` read the result.
Here each trajectory is checked, token by token, against the rollout rollgym recorded: AReaL's layout is the whole
sequence, unshifted (its actor rolls by one), versions per sampled id, failures rejected as None."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.trainer_venv import run_side

from rollgym.engines.default_model import smollm2_dir
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.output import read_rollouts

pytestmark = pytest.mark.slow  # AReaL's venv, the real SmolLM2 and a scripted group: a minute or more here


@pytest.fixture(scope="module")
def areal_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("areal")
    records = tmp / "records"
    side = Path(__file__).with_name("areal_side.py")
    out = run_side("areal", side, [tmp / "out.json", records, smollm2_dir()], tmp / "out.json")
    rollouts = [r for p in sorted(records.glob("rollouts-*.jsonl")) for r in read_rollouts(p)]
    return out, rollouts


def rollout_of(traj, rollouts):
    for r in rollouts:
        if r.error is None:
            [s] = training_samples(r)
            if s.prompt_ids + s.completion_ids == traj["input_ids"][0]:
                return r, s
    raise AssertionError("no recorded rollout has this trajectory's ids")


def check_layout(traj, sample):
    """AReaL's multi-turn layout (areal/workflow/multi_turn.py:95-124), rollgym's ids and masks token by token."""
    n = len(sample.prompt_ids)
    assert traj["loss_mask"][0] == [0] * n + sample.env_mask  # masks == env_mask, the prompt masked
    assert traj["logprobs"][0] == [0.0] * n + sample.logprobs  # unshifted: index t is token t's logprob
    assert traj["attention_mask"][0] == [True] * len(traj["input_ids"][0])
    assert traj["rewards"] == [sample.reward]
    # AReaL's actor rolls mask and logprobs by one (trainer/ppo/actor.py): position t then scores token t + 1
    rolled_mask, rolled_lp = traj["loss_mask"][0][1:] + [0], traj["logprobs"][0][1:] + [0.0]
    for t, m in enumerate(rolled_mask):
        if m:
            k = t + 1 - n
            assert sample.env_mask[k] == 1 and rolled_lp[t] == sample.logprobs[k]


def test_scripted_group_with_tool_turns_and_a_weights_update_between_turns(areal_run):
    out, rollouts = areal_run
    right, wrong = out["scripted"]
    (r1, s1), (r2, s2) = rollout_of(right, rollouts), rollout_of(wrong, rollouts)
    assert (r1.reward, r2.reward) == (1.0, 0.0) and len(r1.turns) == len(r2.turns) == 2
    for traj, sample in ((right, s1), (wrong, s2)):
        check_layout(traj, sample)
        assert 0 in sample.env_mask and all(
            lp == -0.25 for lp, m in zip(sample.logprobs, sample.env_mask, strict=True) if m
        )
    n = len(s1.prompt_ids)
    first, second = r1.turns
    expected = (
        [-1] * n + [4] * len(first.completion_ids) + [-1] * len(first.bridge_ids) + [5] * len(second.completion_ids)
    )
    assert right["versions"][0] == expected  # AReaL's output_versions per sampled id, -1 on prompt and tool ids
    assert set(wrong["versions"][0]) == {-1, 5}
    assert out["batch"]["input_ids"][0] == 2 and out["batch"]["rewards"] == [2]  # concat_padded_tensors batched them
    # one rid per rollout (AReaL keeps a rid on one server and its KV cache), token-in: each prompt extends the last
    reqs = out["requests"]
    assert reqs[0]["rid"] == reqs[1]["rid"] != reqs[2]["rid"] == reqs[3]["rid"]
    assert reqs[1]["input_ids"][: len(reqs[0]["input_ids"])] == reqs[0]["input_ids"]
    assert reqs[0]["input_ids"] == s1.prompt_ids


def test_failed_rows_are_rejected_as_none(areal_run):
    out, rollouts = areal_run
    assert out["bad"] == [None, None, None]  # unknown environment, refused task, dead engine: AReaL drops each
    assert any(r.error is not None and "answer" in r.error.message for r in rollouts)  # the refused task's record


def test_the_real_smollm2_through_areals_agenerate(areal_run):
    out, rollouts = areal_run
    traj = out["real"]
    rollout, sample = rollout_of(traj, rollouts)
    assert rollout.engine == "areal" and rollout.turns and rollout.turns[0].completion_ids
    check_layout(traj, sample)
    sampled = [v for v, m in zip(traj["versions"][0], traj["loss_mask"][0], strict=True) if m]
    assert sampled and set(sampled) == {2}
    assert all(lp <= 0.0 for lp in sample.logprobs) and any(lp < 0.0 for lp in sample.logprobs)
