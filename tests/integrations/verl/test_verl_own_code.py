"""verl's own code consumes rollgym's rollouts: verl 0.9.1 in its own venv (.ci/trainers-up verl) runs its real
`AgentLoopWorker.generate_sequences` over rows its `RLHFDataset` read, with rollgym's agent loop registered through
`agent_loop_config_path`, then its GRPO advantage, log-prob recomputation and PPO loss (verl_side.py). Here the batch
verl built is checked, token by token, against the rollouts rollgym recorded."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.trainer_venv import run_side

from rollgym.engines.default_model import smollm2_dir
from rollgym.rollouts.output import read_rollouts

RESPONSE_LENGTH = 96


@pytest.fixture(scope="module")
def verl_batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verl")
    work = tmp / "work"
    work.mkdir()
    side = Path(__file__).with_name("verl_side.py")
    batch = run_side("verl", side, [tmp / "out.json", work, smollm2_dir()], tmp / "out.json")
    rollouts = {r.id: r for p in batch["records"] for r in read_rollouts(p)}
    return batch, rollouts


def unpad_response(batch, i):
    width = len(batch["responses"][i])
    n = sum(batch["attention_mask"][i][-width:])
    return n


def test_verls_batch_holds_rollgyms_ids_mask_and_logprobs_token_by_token(verl_batch):
    batch, rollouts = verl_batch
    assert {"prompts", "responses", "response_mask", "rollout_log_probs", "rm_scores", "input_ids"} <= set(
        batch["keys"]
    )
    ids = batch["extra_fields"]["rollgym_rollout_id"]
    checked = 0
    for i, rid in enumerate(ids):
        if not rid or batch["extra_fields"]["rollgym_error"][i]:
            continue
        view = rollouts[rid].token_view()
        n = unpad_response(batch, i)
        want = view["completion_ids"][:RESPONSE_LENGTH]
        assert n == len(want) and batch["responses"][i][:n] == want
        assert batch["response_mask"][i][:n] == view["env_mask"][:n] and not any(batch["response_mask"][i][n:])
        assert all(
            math.isclose(a, b, abs_tol=1e-6)
            for a, b in zip(batch["rollout_log_probs"][i][:n], view["logprobs"], strict=False)
        )
        prompt = view["prompt_ids"]
        assert batch["prompts"][i][-len(prompt) :] == prompt  # left-padded by verl, ours intact
        assert (batch["extra_fields"]["min_global_steps"][i], batch["extra_fields"]["max_global_steps"][i]) == (3, 3)
        checked += 1
    assert checked == 4
    # the scripted group ran tool turns: a bridge of environment ids with mask 0 sits between sampled runs
    tool_rows = [i for i, t in enumerate(batch["extra_fields"]["rollgym_task_id"]) if t == "calc-3-1"]
    assert len(tool_rows) == 2 and all(batch["num_turns"][i] == 6 for i in tool_rows)
    for i in tool_rows:
        mask = batch["response_mask"][i][: unpad_response(batch, i)]
        assert mask[0] == 1 and 0 in mask and mask[-1] == 1
    # one id per rollout, kept for all its turns (verl routes a rollout's turns to one server and its prefix cache)
    assert len(set(batch["request_ids"])) == 4 and len(batch["request_ids"]) == 6


def test_verls_advantage_and_loss_read_the_rewards_and_the_sampling_logprobs(verl_batch):
    batch, _ = verl_batch
    scores = [max(row, key=abs) for row in batch["rm_scores"]]
    tasks = batch["extra_fields"]["rollgym_task_id"]
    scripted = [i for i, t in enumerate(tasks) if t == "calc-3-1"]
    assert sorted(scores[i] for i in scripted) == [0.0, 1.0]
    for i in scripted:  # GRPO: +-1/sqrt(2) on every sampled token of the group's two samples, 0 elsewhere
        expected = 0.7071 if scores[i] == 1.0 else -0.7071
        for a, m in zip(batch["advantages"][i], batch["response_mask"][i], strict=True):
            assert math.isclose(a, expected if m else 0.0, abs_tol=1e-3)
    # the actor's recomputation (verl's logprobs_from_logits over verl's input_ids and position ids) of what the real
    # model sampled matches the sampling logprobs rollgym recorded
    assert batch["sampled_tokens"] > 0 and batch["max_logprob_gap"] < 1e-3
    assert math.isfinite(batch["loss"]) and batch["loss"] != 0.0 and math.isfinite(batch["ppo_kl"])


def test_failed_rows_are_masked_samples_with_reward_zero_and_their_reason(verl_batch):
    batch, _ = verl_batch
    errors = batch["extra_fields"]["rollgym_error"]
    failed = [i for i, e in enumerate(errors) if e]
    assert len(failed) == 4  # two rows of an unknown environment, two of a task the Calculator refuses
    assert sum("no environment 'rollgym/NoSuchEnv-v0' is registered" in errors[i] for i in failed) == 2
    assert sum("missing ['answer']" in errors[i] for i in failed) == 2
    for i in failed:
        assert not any(batch["response_mask"][i]) and not any(batch["rm_scores"][i])
        assert not any(batch["advantages"][i])
