"""τ²-bench with the real SmolLM2-135M as the policy and as the user model: the rollout is token-exact (the sampled ids
are the turns' ids, each turn's prompt extends the last), the user's replies are environment tokens (mask 0) recorded
with the user's own messages and the ids the user model sampled; `rollgym generate --env tau2/airline-v0` runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import rollgym as rg


@pytest.mark.slow  # SmolLM2 on CPU writes both sides of two turns
async def test_a_short_episode_with_smollm2_on_both_sides_is_token_exact():
    limits = rg.Limits(max_turns=2, max_tokens_per_turn=24)
    [rollout] = await rg.run_rollouts(
        "tau2/airline-v0", [{"task_id": "0"}], "smollm2-135m", limits=limits, env_kwargs={"user_model": "smollm2-135m"}
    )
    assert rollout.error is None, rollout.error
    assert rollout.token_exact and 0.0 <= rollout.reward <= 1.0
    view = rollout.token_view()
    assert len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"])
    sampled = [i for i, m in zip(view["completion_ids"], view["env_mask"], strict=True) if m]
    assert sampled == [i for turn in rollout.turns for i in turn.completion_ids]
    full = view["prompt_ids"] + view["completion_ids"]
    for turn in rollout.turns:
        assert full[turn.prompt_len : turn.prompt_len + len(turn.completion_ids)] == turn.completion_ids
    users = [m for m in rollout.initial_messages if m["role"] == "user"]
    users += [m for turn in rollout.turns for m in turn.env_messages if m["role"] == "user"]
    assert users and all(m["user_model"]["model"] and m["user_model"]["token_ids"] for m in users)
    tokenizer = rg.Policy("smollm2-135m").tokenizer
    opening = tokenizer.decode(view["prompt_ids"])  # the user's first message is in the prompt: never sampled
    assert users[0]["content"].strip() in opening
    if len(rollout.turns) > 1:  # the user's later replies are the environment's tokens between turns (mask 0)
        assert any(not m for m in view["env_mask"])


@pytest.mark.slow
def test_rollgym_generate_runs_tau2_airline(tmp_path):
    out = tmp_path / "run"
    argv = ["--env", "tau2/airline-v0", "--num-tasks", "1", "--n", "1", "--max-tokens", "16", "--max-turns", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "rollgym", "generate", *argv, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [rollout] = list(rg.read_rollouts(out / "rollouts.jsonl"))
    assert rollout.env_id == "tau2/airline-v0" and rollout.task_id == "0"
    assert rollout.error is None, rollout.error
    assert rollout.model == "smollm2-135m" and rollout.token_exact
