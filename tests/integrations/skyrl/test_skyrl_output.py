"""rollgym's samples as SkyRL 0.4's `GeneratorOutput`, in rollgym's own venv (SkyRL's own code reads them in
test_skyrl_own_code.py): ids, loss masks and logprobs token by token, stop reasons for SkyRL's filters, failures
kept as masked rows, the engine over SkyRL's client, the export command."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import EngineError
from rollgym.integrations.skyrl import SkyRLClientEngine, dataset_rows, generator_output
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.batch import run_rollouts


def calculator_rollouts(tool_tok, say, tasks, right=True):
    """Each task: `add` (a tool turn), then `submit`: two turns with one bridge of tool ids."""

    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        task = tasks[(n - 1) // 2 % len(tasks)]
        answer = task.get("answer", 0) + (0 if right else 1)
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=answer)

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))


def test_generator_output_is_rollgyms_ids_masks_and_logprobs(tool_tok, say):
    rollouts = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(2))
    out = generator_output([training_samples(r)[0] for r in rollouts])
    for i, rollout in enumerate(rollouts):
        view = rollout.token_view()
        assert out["prompt_token_ids"][i] == view["prompt_ids"]
        assert out["response_ids"][i] == view["completion_ids"]
        assert out["loss_masks"][i] == view["env_mask"] and 0 in view["env_mask"]
        assert out["rollout_logprobs"][i] == view["logprobs"]
    assert out["rewards"] == [1.0, 1.0] and out["stop_reasons"] == ["stop", "stop"]
    assert out["rollout_metrics"]["rollgym/failed"] == 0.0


def test_responses_are_cut_at_the_generate_length_and_marked_length(tool_tok, say):
    rollout = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))[0]
    sample = training_samples(rollout)[0]
    out = generator_output([sample], max_response=6)
    assert out["response_ids"][0] == sample.completion_ids[:6] and len(out["loss_masks"][0]) == 6
    assert out["stop_reasons"] == ["length"] and out["rollout_metrics"]["rollgym/truncated"] == 1.0


def test_a_failed_rollout_is_a_masked_row_with_reward_zero_and_stop_reason_error(tool_tok, say):
    bad = [{"task_id": "no-answer", "question": "What is 1 + 1?"}]
    rollout = calculator_rollouts(tool_tok, say, bad)[0]
    out = generator_output(training_samples(rollout))
    assert out["stop_reasons"] == ["error"] and out["rewards"] == [0.0] and not any(out["loss_masks"][0])


class SkyRLClientProtocol:
    """Answers as SkyRL 0.4.0's `InferenceEngineInterface.generate` (skyrl/backends/skyrl_train/inference_servers/
    base.py:25-77): one row in, `responses`, `response_ids`, vLLM's `stop_reasons`, `response_logprobs` when
    `logprobs` is asked for; `weight_version` as SkyRL's clients carry it. The ids come from `script`."""

    weight_version = 4

    def __init__(self, script, stop_reason="stop"):
        self.script, self.stop_reason, self.requests = script, stop_reason, []

    async def generate(self, input_batch, model=None):
        self.requests.append(input_batch)
        params = input_batch["sampling_params"]
        ids = [] if self.stop_reason == "abort" else list(self.script)[: params["max_tokens"]]
        return {
            "responses": ["..."],
            "response_ids": [ids],
            "stop_reasons": [self.stop_reason],
            "response_logprobs": [[-0.5] * len(ids)] if params.get("logprobs") is not None else None,
            "prompt_logprobs": None,
        }


def test_the_skyrl_client_engine_sends_one_session_and_reads_stop_reasons_and_versions():
    client = SkyRLClientProtocol([5, 6, 2])
    engine = SkyRLClientEngine(client, session_id="s1")
    gen = asyncio.run(engine.generate([1, 2, 3], SamplingParams(max_tokens=8, stop_token_ids=[2], top_k=0, seed=3)))
    assert gen.completion_ids == [5, 6, 2] and gen.finish_reason == "stop" and gen.stop_token_id == 2
    assert gen.policy_version == 4 and gen.logprobs == [-0.5] * 3
    request = client.requests[0]
    assert request["prompt_token_ids"] == [[1, 2, 3]] and request["session_ids"] == ["s1"]
    assert request["sampling_params"]["top_k"] == -1 and request["sampling_params"]["logprobs"] == 0
    cut = asyncio.run(
        SkyRLClientEngine(SkyRLClientProtocol([5, 6, 7], "length"), session_id="s").generate(
            [1], SamplingParams(max_tokens=2)
        )
    )
    assert cut.finish_reason == "length" and cut.completion_ids == [5, 6]
    aborted = asyncio.run(SkyRLClientEngine(SkyRLClientProtocol([5], "abort"), session_id="s").generate([1]))
    assert aborted.finish_reason == "abort"


def test_a_dead_engine_is_an_engine_error_naming_skyrl():
    class Dead:
        async def generate(self, input_batch, model=None):
            raise ConnectionError("engine 0 is gone")

    with pytest.raises(EngineError, match="SkyRL's inference engine failed the request: ConnectionError"):
        asyncio.run(SkyRLClientEngine(Dead(), session_id="s").generate([1, 2]))


def test_dataset_rows_name_the_environment_as_env_class_and_carry_the_task():
    tasks = CalculatorEnv.default_tasks(2)
    rows = dataset_rows("rollgym/Calculator-v0", tasks)
    assert {r["env_class"] for r in rows} == {"rollgym/Calculator-v0"}
    assert [json.loads(r["task"]) for r in rows] == tasks


def test_export_writes_one_generator_output_with_trajectory_ids(tool_tok, say, tmp_path):
    tasks = CalculatorEnv.default_tasks(2)
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=0)), tokenizer=tool_tok)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=tasks, n=2, concurrency=2)
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--format", "skyrl", "--response-length", "4"])
    assert result.exit_code == 0, result.output
    batch = json.loads((tmp_path / "run" / "skyrl.json").read_text())
    assert len(batch["response_ids"]) == 4 and all(len(r) == 4 for r in batch["response_ids"])
    ids = sorted((t["instance_id"], t["repetition_id"]) for t in batch["trajectory_ids"])
    assert ids == sorted((t["task_id"], k) for t in tasks for k in range(2))


def test_export_keeps_each_grpo_group_contiguous_whatever_order_the_rollouts_finished_in(tool_tok, say, tmp_path):
    """Rollouts are written as they finish, a group's samples interleaved with other groups'; SkyRL's trainer asserts
    each uid's rows are contiguous (`compute_prompt_mini_batch_boundaries`), so the export groups them, by index."""
    tasks = CalculatorEnv.default_tasks(2)
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=0)), tokenizer=tool_tok)
    run = tmp_path / "run"
    rg.generate("rollgym/Calculator-v0", policy, out=run, tasks=tasks, n=2, concurrency=1)
    lines = (run / "rollouts.jsonl").read_text().splitlines()
    (run / "rollouts.jsonl").write_text("\n".join([lines[3], lines[0], lines[2], lines[1]]) + "\n")
    assert CliRunner().invoke(app, ["export", str(run), "--format", "skyrl"]).exit_code == 0
    batch = json.loads((run / "skyrl.json").read_text())
    order = [(t["instance_id"], t["repetition_id"]) for t in batch["trajectory_ids"]]
    groups = [group for group, _ in order]
    assert [g for k, g in enumerate(groups) if k == 0 or g != groups[k - 1]] == list(dict.fromkeys(groups))
    assert sorted(order) == sorted((t["task_id"], k) for t in tasks for k in range(2))
    by_row = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    first = [r["group_id"] for r in by_row]
    assert groups[0] == first[0]  # groups in the order they first appear
