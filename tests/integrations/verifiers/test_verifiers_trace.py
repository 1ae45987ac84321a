"""rollgym rollouts as verifiers 0.4 v1 `Episode`/`Trace` records, in rollgym's own venv (verifiers' own code reads
them in test_verifiers_own_code.py): node deltas joined give the ids token by token, mask and compact logprobs,
rewards, failures, the policy span, template rewrites as branches, the export command and the version gate."""

from __future__ import annotations

import json

import pytest
from rollouts_for_verifiers import calculator_rollouts, varied_rollouts
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import UsageError
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.verifiers import branch_view, episode_record, trace_record


def paths(nodes: list[dict]) -> list[list[dict]]:
    """Root-to-leaf paths, as verifiers' `Trace.branches` walks them."""
    parents = {n["parent"] for n in nodes}
    out = []
    for leaf in [i for i in range(len(nodes)) if i not in parents]:
        path, i = [], leaf
        while i is not None:
            path.append(nodes[i])
            i = nodes[i]["parent"]
        out.append(path[::-1])
    return out


def joined(path: list[dict]) -> dict[str, list]:
    return {
        "token_ids": [t for n in path for t in n["token_ids"]],
        "sampled_mask": [m for n in path for m in n["mask"]],
    }


def test_node_deltas_join_to_rollgyms_ids_with_mask_on_sampled_ids(tool_tok, say):
    rollout = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))[0]
    trace = trace_record(rollout)
    nodes = trace["nodes"]
    assert [n["message"]["role"] for n in nodes] == ["system", "user", "assistant", "tool", "assistant"]
    (path,) = paths(nodes)
    view = rollout.token_view()
    assert joined(path)["token_ids"] == view["prompt_ids"] + view["completion_ids"]
    assert joined(path)["sampled_mask"] == [False] * len(view["prompt_ids"]) + [bool(m) for m in view["env_mask"]]
    first, second = rollout.turns
    # as verifiers' own _commit_turn without message spans: input messages add no ids, the assistant node carries the
    # new prompt ids (mask False) then its completion (mask True), and one logprob per True
    assert nodes[0]["token_ids"] == [] and nodes[3]["token_ids"] == []
    assert nodes[2]["token_ids"] == rollout.prompt_ids + first.completion_ids
    assert nodes[4]["token_ids"] == first.bridge_ids + second.completion_ids
    assert nodes[4]["logprobs"] == second.logprobs and len(nodes[4]["logprobs"]) == sum(nodes[4]["mask"])
    assert nodes[2]["message"]["tool_calls"][0]["name"] == "add" and nodes[3]["message"]["tool_call_id"]
    assert nodes[0]["tools"] and {t["name"] for t in nodes[0]["tools"]} >= {"add", "submit"} and not nodes[2]["tools"]
    assert trace["rewards"] == {"reward": {"score": 1.0, "weight": 1.0}} and trace["ok"] is True
    assert trace["metrics"]["reward/correct"] == 1.0 and trace["stop_condition"] == "env_terminated"


def test_failures_versions_and_template_rewrites(tool_tok, say):
    kinds = varied_rollouts(tool_tok, say)
    failed = episode_record(kinds["failed"])
    trace = failed["traces"][0]
    assert failed["ok"] is False and trace["ok"] is False and trace["rewards"] == {"reward": None}
    assert trace["stop_condition"] == "environment_error" and "answer" in trace["errors"][0]["message"]
    assert "run" not in failed
    stamped = episode_record(kinds["versions"], run_id="run-7")
    assert stamped["run"]["work"]["policy"] == {"start": 3, "end": 5} and stamped["run"]["id"] == "run-7"
    assert stamped["traces"][0]["info"]["rollgym_policy_versions"] == [3, 5]
    template = kinds["template"]
    branches = [joined(p) for p in paths(trace_record(template)["nodes"])]
    want = branch_view(template)
    assert len(want) == 2 and [b["token_ids"] for b in branches] == [w["token_ids"] for w in want]
    assert [b["sampled_mask"] for b in branches] == [w["sampled_mask"] for w in want]


def test_a_real_smollm2_episode_joins_to_its_sampled_ids(smollm2_rollout, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "rollouts.jsonl").write_text(smollm2_rollout.to_json() + "\n")
    result = CliRunner().invoke(app, ["export", str(run), "--format", "verifiers", "--include-errored"])
    assert result.exit_code == 0, result.output
    (line,) = (run / "verifiers.jsonl").read_text().splitlines()
    (path,) = paths(json.loads(line)["traces"][0]["nodes"])
    assert joined(path) == {k: v for k, v in branch_view(smollm2_rollout)[0].items() if k != "logprobs"}
    sampled = [lp for n in path for lp in n["logprobs"]]
    assert sampled == [lp for t in smollm2_rollout.turns for lp in t.logprobs] and all(lp <= 0.0 for lp in sampled)
    assert len(sampled) == sum(len(t.completion_ids) for t in smollm2_rollout.turns) > 0


def test_export_writes_one_episode_per_rollout_and_refuses_an_empty_run(tool_tok, say, tmp_path):
    policy = rg.Policy(engine=rg_scripted(say), tokenizer=tool_tok)
    tasks = CalculatorEnv.default_tasks(2)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=tasks, n=2, concurrency=2)
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(tmp_path / "run"), "--format", "verifiers"])
    assert result.exit_code == 0 and "wrote 4 rows" in result.output
    records = [json.loads(x) for x in (tmp_path / "run" / "verifiers.jsonl").read_text().splitlines()]
    assert {r["group"]["id"] for r in records} == {t["task_id"] for t in tasks}
    assert all(r["traces"][0]["rewards"]["reward"]["score"] == 0.0 for r in records)  # submit 0 is wrong
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "rollouts.jsonl").write_text("")
    bad = runner.invoke(app, ["export", str(empty), "--format", "verifiers"])
    assert bad.exit_code == 2 and "no exportable rollouts" in bad.output


def rg_scripted(say):
    from rollgym.engines.scripted import ScriptedEngine

    return ScriptedEngine(lambda prompt, sampling: say.call("submit", answer=0))


def test_a_verifiers_outside_the_tested_range_is_refused_naming_the_range():
    assert require_trainer("verifiers", installed="0.4.0") == "0.4.0"
    with pytest.raises(
        UsageError, match=r"verifiers 0\.3\.1 is outside the versions .* tested with \(<0\.5,>=0\.4\.0\)"
    ):
        require_trainer("verifiers", installed="0.3.1")
