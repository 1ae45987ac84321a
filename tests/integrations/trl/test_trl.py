"""TRL's real GRPOTrainer (CPU, use_vllm=False) trains through rollgym's rollout_func on the default model."""

from __future__ import annotations

import json
import math
import os

import pytest

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.trl.rollout_func import (
    component_reward,
    env_reward,
    make_rollout_func,
    task_from_prompt,
    to_trl_columns,
)
from rollgym.limits import Limits
from rollgym.rollouts.policy import Policy


def test_columns_follow_trl_contract(tool_tok, say):
    import asyncio

    from rollgym.rollouts.batch import run_rollouts

    tasks = CalculatorEnv.default_tasks(2)
    engine = ScriptedEngine([say.call("submit", answer=tasks[0]["answer"]), say.text("no idea")])
    rollouts = asyncio.run(
        run_rollouts("rollgym/Calculator-v0", tasks, Policy(engine=engine, tokenizer=tool_tok), n=1, concurrency=1)
    )
    cols = to_trl_columns(rollouts, pad_id=0)
    assert {"prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "reward_correct", "rollgym_turns"} <= set(
        cols
    )
    assert all(len(v) == 2 for v in cols.values())
    for ids, lps, mask in zip(cols["completion_ids"], cols["logprobs"], cols["env_mask"], strict=True):
        assert len(ids) == len(lps) == len(mask) and mask[-1] == 1 and ids[-1] == tool_tok.end_of_turn_id
    assert cols["reward"] == [1.0, 0.0] and env_reward(None, **cols) == [1.0, 0.0]
    assert component_reward("submitted")(None, **cols) == [1.0, 0.0]
    rollouts[1].token_exact = False
    with pytest.raises(ValueError, match="not token-exact"):
        to_trl_columns(rollouts, pad_id=0)


def test_task_from_prompt():
    assert task_from_prompt('{"task_id": "a"}') == {"task_id": "a"}
    assert task_from_prompt({"task_id": "b"}) == {"task_id": "b"}
    with pytest.raises(ValueError, match="JSON task row"):
        task_from_prompt("What is 2+2?")


@pytest.mark.slow
def test_grpo_trainer_trains_two_steps_through_rollgym(tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rollgym.engines.default_model import smollm2_dir

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tasks = CalculatorEnv.default_tasks(2)
    dataset = Dataset.from_list([{"prompt": json.dumps(t)} for t in tasks])
    rollout_func = make_rollout_func("rollgym/Calculator-v0", limits=Limits(max_turns=1, max_tokens_per_turn=16))

    def confidence(completions, rollgym_logprob_mean, **kwargs):
        """A rollgym metric column as a reward: it differs between samples, so GRPO has a gradient."""
        return list(rollgym_logprob_mean)

    batches = []
    original = rollout_func

    def recording(prompts, trainer):
        out = original(prompts, trainer)
        batches.append((list(prompts), list(original.last_rollouts), out))
        return out

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=2,
        max_completion_length=16,
        learning_rate=1e-6,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        temperature=1.0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=str(smollm2_dir()),
        reward_funcs=[env_reward, component_reward("submitted"), confidence],
        args=args,
        train_dataset=dataset,
        rollout_func=recording,
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2 and len(batches) == 2
    for step, (prompts, rollouts, out) in enumerate(batches):
        assert len(rollouts) == len(prompts) == 2
        assert all(t.policy_version == step for r in rollouts for t in r.turns)  # the step's weights sampled them
        assert [json.loads(p)["task_id"] for p in prompts][::2] == [json.loads(p)["task_id"] for p in prompts][1::2]
        assert out["reward"] == [r.reward for r in rollouts]
    logs = [h for h in trainer.state.log_history if "rewards/env_reward/mean" in h]
    assert len(logs) == 2
    for log, (_, rollouts, _) in zip(logs, batches, strict=True):
        scored = [r.reward for r in rollouts if r.error is None]
        submitted = [r.reward_components.get("submitted", 0.0) for r in rollouts if r.error is None]
        assert math.isclose(log["rewards/env_reward/mean"], sum(scored) / len(scored), abs_tol=1e-6)
        assert math.isclose(log["rewards/submitted/mean"], sum(submitted) / len(submitted), abs_tol=1e-6)
        conf = [r.metrics()["logprob_mean"] for r in rollouts]
        assert math.isclose(log["rewards/confidence/mean"], sum(conf) / len(conf), rel_tol=1e-4)
    changed = any(not p.detach().equal(before[n]) for n, p in trainer.model.named_parameters())
    assert changed  # the optimizer stepped on rollgym's tokens


def test_the_policys_own_failures_keep_their_reward_others_are_unscorable():
    """A policy must not escape its penalty through an error it caused (the disk budget); infrastructure,
    timeouts, environment bugs and crashed agent programs give None, which TRL leaves out."""
    errors = ["", "disk", "agent", "engine", "sandbox", "internal", "timeout", "environment", "tokenization"]
    rewards = [1.0] + [0.0] * (len(errors) - 1)
    assert env_reward(None, reward=rewards, rollgym_error=errors) == [1.0, 0.0] + [None] * 7
    assert component_reward("resolved")(None, reward_resolved=rewards, rollgym_error=errors) == [1.0, 0.0] + [None] * 7


@pytest.mark.parametrize("family", ["gpt-oss", "mistral-v11", "kimi-k2"])
def test_rollout_func_columns_in_each_familys_own_format(family_tok, family):
    """A GPT-OSS, Mistral or Kimi policy gives TRL token-exact columns ending on the family's own stop token."""
    from support import call_message, written_turn

    tok = family_tok(family)
    probe = CalculatorEnv.default_tasks(1)[0]
    from rollgym.envs import make

    tools = make("rollgym/Calculator-v0").unwrapped.toolset.schemas()
    submit = written_turn(tok, call_message("submit", "functions.submit:0", answer=probe["answer"]), tools)
    func = make_rollout_func(
        "rollgym/Calculator-v0",
        Policy(engine=ScriptedEngine(lambda p, s: submit), tokenizer=tok),
        limits=Limits(max_turns=2, max_tokens_per_turn=64),
    )
    cols = func([json.dumps(probe)] * 2, trainer=None)
    assert cols["reward"] == [1.0, 1.0] and cols["completion_ids"] == [submit, submit]
    assert all(m == [1] * len(submit) for m in cols["env_mask"]) and submit[-1] in tok.stop_token_ids
    assert func.last_rollouts[0].history == "keep" and len(func.last_rollouts[0].samples()) == 1


def test_template_history_is_refused_with_a_reason(tool_tok):
    with pytest.raises(ValueError, match="one sample per rollout"):
        make_rollout_func(
            "rollgym/Calculator-v0", Policy(engine=ScriptedEngine([]), tokenizer=tool_tok, history="template")
        )
