"""rollgym's samples as AReaL trajectories, checked against AReaL's field contract (areal 1.0.4 wheel:
areal/workflow/multi_turn.py and rlvr.py build the dict, infra/workflow_executor.py requires its keys,
trainer/ppo/actor.py rolls it by one; AReaL pins torch < 2.11, so its own code cannot run beside this machine's
torch 2.13): whole-sequence rows, unshifted, sampled ids masked in, versions -1 off the sampled ids, failures
rejected, and AReaL's own roll lining each next-token position up with a sampled id."""

from __future__ import annotations

import asyncio
import json

import torch
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.areal import EPISODE_KEYS, episode_rows, episode_tensors
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.batch import run_rollouts


def rollouts(tool_tok, say, tasks):
    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        task = tasks[(n - 1) // 2 % len(tasks)]
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=task.get("answer", 0))

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))


def test_the_trajectory_is_whole_unshifted_and_masked_on_sampled_ids(tool_tok, say):
    [rollout] = rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))
    rollout.turns[0].policy_version, rollout.turns[1].policy_version = 2, 3
    episode = episode_tensors(training_samples(rollout)[0])
    assert episode is not None and tuple(episode) == EPISODE_KEYS
    view = rollout.token_view()
    ids = view["prompt_ids"] + view["completion_ids"]
    p = len(view["prompt_ids"])
    assert episode["input_ids"].shape == (1, len(ids)) and episode["input_ids"][0].tolist() == ids
    assert episode["loss_mask"][0].tolist() == [0] * p + view["env_mask"]
    assert episode["logprobs"][0, p:].tolist() == view["logprobs"] and not episode["logprobs"][0, :p].any()
    first = len(rollout.turns[0].completion_ids)
    versions = episode["versions"][0].tolist()
    assert set(versions[:p]) == {-1} and set(versions[p : p + first]) == {2} and versions[-1] == 3
    assert all(v == -1 for v, m in zip(versions, episode["loss_mask"][0].tolist(), strict=True) if not m)
    assert episode["attention_mask"].dtype == torch.bool and episode["attention_mask"].all()
    assert episode["rewards"].tolist() == [1.0]
    # AReaL's actor rolls the mask and logprobs by -1: position t then scores token t+1, a sampled one where mask is 1
    rolled_mask = torch.roll(episode["loss_mask"], shifts=-1, dims=-1)[0]
    rolled_lp = torch.roll(episode["logprobs"], shifts=-1, dims=-1)[0]
    for t in range(len(ids) - 1):
        if rolled_mask[t]:
            assert ids[t + 1] in view["completion_ids"] and rolled_lp[t].item() == -0.25


def test_a_failed_rollout_is_rejected_as_areal_rejects_one(tool_tok, say):
    [rollout] = rollouts(tool_tok, say, [{"task_id": "no-answer", "question": "What is 1 + 1?"}])
    assert episode_rows(training_samples(rollout)[0]) is None and episode_tensors(training_samples(rollout)[0]) is None


def test_export_writes_one_trajectory_per_line(tool_tok, say, tmp_path):
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=0)), tokenizer=tool_tok)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=CalculatorEnv.default_tasks(2), n=1)
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--format", "areal"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "areal.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(len(r["input_ids"][0]) == len(r["loss_mask"][0]) for r in rows)
