"""rollgym's samples as slime `Sample` fields, checked against slime's field contract (THUDM/slime 624b824,
slime/utils/types.py: `Sample` and `append_response_tokens`' invariants; slime is not on PyPI and its trainer needs
sglang and Megatron, so its own code cannot run here): tokens = prompt + response, loss mask and rollout logprobs
`response_length` long and aligned to the response, statuses, weight versions, failures removed, the export."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.slime import SAMPLE_FIELDS, slime_sample, slime_samples
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.batch import run_rollouts

#: every field of `Sample` at slime 624b824 (slime/utils/types.py:93-160), what a row may name
SLIME_SAMPLE_FIELDS = {
    "group_index", "index", "rollout_id", "prompt", "tokens", "multimodal_inputs", "multimodal_train_inputs",
    "multimodal_train_input_id", "apply_chat_template_kwargs", "response", "response_length", "label", "reward",
    "loss_mask", "weight_versions", "rollout_log_probs", "rollout_top_p_token_ids", "rollout_top_p_token_offsets",
    "rollout_routed_experts", "remove_sample", "teacher_log_probs", "status", "metadata", "generate_function_path",
    "custom_rm_path", "train_metadata", "session_id", "non_generation_time", "spec_info", "prefix_cache_info",
}  # fmt: skip
STATUSES = {"pending", "completed", "truncated", "aborted", "failed"}  # Sample.Status values


def rollouts(tool_tok, say, tasks):
    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        task = tasks[(n - 1) // 2 % len(tasks)]
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=task.get("answer", 0))

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))


def test_fields_follow_slimes_contract_token_by_token(tool_tok, say):
    [rollout] = rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))
    rollout.turns[0].policy_version, rollout.turns[1].policy_version = 3, 4
    row = slime_sample(training_samples(rollout)[0], index=0, group_index=0)
    assert set(row) == set(SAMPLE_FIELDS) <= SLIME_SAMPLE_FIELDS and row["status"] in STATUSES
    view = rollout.token_view()
    n = row["response_length"]
    assert row["tokens"] == view["prompt_ids"] + view["completion_ids"] and n == len(view["completion_ids"])
    assert row["tokens"][len(row["tokens"]) - n :] == view["completion_ids"]  # response id i = tokens[-n + i]
    assert row["loss_mask"] == view["env_mask"] and len(row["rollout_log_probs"]) == n
    assert all(lp == 0.0 for lp, m in zip(row["rollout_log_probs"], row["loss_mask"], strict=True) if not m)
    assert all(lp == -0.25 for lp, m in zip(row["rollout_log_probs"], row["loss_mask"], strict=True) if m)
    assert row["weight_versions"] == ["3", "4"] and row["status"] == "completed" and row["reward"] == 1.0
    cut = slime_sample(training_samples(rollout)[0], index=0, group_index=0, max_response=5)
    assert cut["response_length"] == 5 == len(cut["loss_mask"]) and cut["status"] == "truncated"


def test_a_failed_rollout_is_a_removed_sample_with_status_failed(tool_tok, say):
    [rollout] = rollouts(tool_tok, say, [{"task_id": "no-answer", "question": "What is 1 + 1?"}])
    row = slime_sample(training_samples(rollout)[0], index=0, group_index=0)
    assert row["remove_sample"] is True and row["status"] == "failed" and row["reward"] == 0.0
    assert "answer" in row["metadata"]["rollgym_error"]


def test_group_indices_number_the_grpo_groups(tool_tok, say):
    tasks = CalculatorEnv.default_tasks(2)
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=0)), tokenizer=tool_tok)
    batch = asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=2, concurrency=1))
    rows = slime_samples([s for r in batch for s in training_samples(r)])
    by_group = {}
    for row, rollout in zip(rows, batch, strict=True):
        by_group.setdefault(rollout.group_id, set()).add(row["group_index"])
    assert sorted(len(v) for v in by_group.values()) == [1, 1] and [r["index"] for r in rows] == [0, 1, 2, 3]


def test_export_writes_sample_rows(tool_tok, say, tmp_path):
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=0)), tokenizer=tool_tok)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=CalculatorEnv.default_tasks(2), n=1)
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--format", "slime"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "slime.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(len(r["loss_mask"]) == r["response_length"] for r in rows)
