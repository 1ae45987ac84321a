"""rollgym's samples as verl 0.9's `AgentLoopOutput` fields, in rollgym's own venv (verl's own code reads them in
test_verl_own_code.py): ids, mask and logprobs token by token, budgets cut as verl's loops cut, failures masked,
versions, the export command and the version gate."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import EngineError, UsageError
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.training_samples import training_samples
from rollgym.integrations.verl import VerlServerEngine, agent_loop_fields, dataset_rows, verl_rows
from rollgym.rollouts.batch import run_rollouts


def calculator_rollouts(tool_tok, say, tasks):
    """Each task: `add` (a tool turn), then `submit` with the right answer: two turns, one bridge of tool ids."""

    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        task = tasks[(n - 1) // 2 % len(tasks)]
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=task["answer"])

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))


def test_fields_are_rollgyms_ids_mask_and_logprobs_token_by_token(tool_tok, say):
    tasks = CalculatorEnv.default_tasks(2)
    rollouts = calculator_rollouts(tool_tok, say, tasks)
    for rollout in rollouts:
        assert rollout.error is None and rollout.reward == 1.0 and len(rollout.turns) == 2
        view = rollout.token_view()
        fields = agent_loop_fields(training_samples(rollout)[0])
        assert fields["prompt_ids"] == view["prompt_ids"]
        assert fields["response_ids"] == view["completion_ids"]
        assert fields["response_mask"] == view["env_mask"]
        assert fields["response_logprobs"] == view["logprobs"]
        first, second = rollout.turns
        bridge = len(first.bridge_ids)
        assert bridge > 0 and fields["response_mask"] == [1] * len(first.completion_ids) + [0] * bridge + [1] * len(
            second.completion_ids
        )
        assert set(fields["response_logprobs"][len(first.completion_ids) : len(first.completion_ids) + bridge]) == {0.0}
        assert fields["reward_score"] == 1.0
        assert fields["num_turns"] == len(rollout.messages())  # system, user, assistant, tool, assistant, tool
        assert fields["extra_fields"]["min_global_steps"] is None and fields["extra_fields"]["rollgym_error"] is None
    rows = verl_rows([training_samples(r)[0] for r in rollouts])
    assert [row["uid"] for row in rows] == [r.group_id for r in rollouts]


def test_budgets_cut_the_response_end_and_the_prompt_start_and_say_so(tool_tok, say):
    rollout = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))[0]
    sample = training_samples(rollout)[0]
    fields = agent_loop_fields(sample, prompt_length=10, response_length=7)
    assert fields["prompt_ids"] == sample.prompt_ids[-10:]
    assert fields["response_ids"] == sample.completion_ids[:7] and fields["response_mask"] == sample.env_mask[:7]
    assert len(fields["response_logprobs"]) == 7
    assert fields["extra_fields"]["rollgym_truncated"] is True
    roomy = agent_loop_fields(sample, prompt_length=10_000, response_length=10_000)
    assert roomy["extra_fields"]["rollgym_truncated"] is False and roomy["response_ids"] == sample.completion_ids


def test_a_failed_rollout_is_a_masked_sample_with_reward_zero(tool_tok, say):
    bad = [{"task_id": "no-answer", "question": "What is 1 + 1?"}]  # the Calculator refuses a task without an answer
    rollout = calculator_rollouts(tool_tok, say, bad)[0]
    assert rollout.error is not None
    fields = agent_loop_fields(training_samples(rollout)[0])
    assert set(fields["response_mask"]) <= {0} and fields["reward_score"] == 0.0
    assert "answer" in fields["extra_fields"]["rollgym_error"]


def test_weights_versions_become_verls_min_and_max_global_steps(tool_tok, say):
    rollout = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))[0]
    rollout.turns[0].policy_version, rollout.turns[1].policy_version = 3, 5
    extra = agent_loop_fields(training_samples(rollout)[0])["extra_fields"]
    assert (extra["min_global_steps"], extra["max_global_steps"]) == (3, 5)


class VerlClientProtocol:
    """Answers as verl 0.9.1's `LLMServerClient.generate` does (verl/workers/rollout/llm_server.py:98-168 with
    vllm_async_server.py:585-760): `max_tokens` taken from the request, `log_probs` only when asked, vLLM's 'stop'
    and 'length' both reported as 'completed', `extra_fields["global_steps"]`; the ids come from `script`."""

    def __init__(self, script, stop_reason="completed", global_steps=7):
        self.script, self.stop_reason, self.global_steps, self.requests = script, stop_reason, global_steps, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.requests.append((request_id, list(prompt_ids), dict(sampling_params)))
        ids = [] if self.stop_reason == "aborted" else list(self.script)[: sampling_params["max_tokens"]]
        return SimpleNamespace(
            token_ids=ids,
            log_probs=[-0.5] * len(ids) if sampling_params.get("logprobs") else None,
            stop_reason=self.stop_reason,
            extra_fields={"global_steps": self.global_steps},
        )


def test_the_verl_client_engine_maps_sampling_finish_reasons_and_versions():
    client = VerlClientProtocol([5, 6, 2])
    engine = VerlServerEngine(client, request_id="r1", response_length=10)
    gen = asyncio.run(engine.generate([1, 2, 3], SamplingParams(max_tokens=8, stop_token_ids=[2], top_k=0, seed=4)))
    assert gen.completion_ids == [5, 6, 2] and gen.finish_reason == "stop" and gen.stop_token_id == 2
    assert gen.policy_version == 7 and gen.logprobs == [-0.5] * 3
    _, _, params = client.requests[0]
    assert params["logprobs"] is True and params["top_k"] == -1 and params["stop_token_ids"] == [2]
    assert params["seed"] == 4 and params["max_tokens"] == 8
    # a later, longer prompt gets only what is left of the response budget (first prompt 3 + 10 - 9 = 4)
    gen = asyncio.run(engine.generate(list(range(1, 10)), SamplingParams(max_tokens=8, stop_token_ids=[99])))
    assert client.requests[-1][2]["max_tokens"] == 4 and gen.finish_reason == "stop" and len(gen.completion_ids) == 3
    cut = asyncio.run(
        VerlServerEngine(VerlClientProtocol([5, 6, 7, 8]), request_id="r2").generate([1], SamplingParams(max_tokens=2))
    )
    assert cut.finish_reason == "length" and cut.completion_ids == [5, 6]
    aborted = asyncio.run(
        VerlServerEngine(VerlClientProtocol([5], stop_reason="aborted"), request_id="r3").generate([1])
    )
    assert aborted.finish_reason == "abort" and aborted.completion_ids == []


def test_a_server_failure_is_an_engine_error_naming_verl():
    class Dead:
        async def generate(self, request_id, **kwargs):
            raise ConnectionError("replica 0 is gone")

    with pytest.raises(EngineError, match="verl's server failed the request: ConnectionError: replica 0 is gone"):
        asyncio.run(VerlServerEngine(Dead(), request_id="r").generate([1, 2]))


def test_dataset_rows_carry_the_environment_and_the_task_as_json():
    tasks = CalculatorEnv.default_tasks(2)
    rows = dataset_rows("rollgym/Calculator-v0", tasks)
    assert [json.loads(r["extra_info"]["task"]) for r in rows] == tasks
    assert {r["agent_name"] for r in rows} == {"rollgym"} and rows[1]["extra_info"]["index"] == 1
    assert rows[0]["prompt"] == [{"role": "user", "content": tasks[0]["question"]}]


def test_export_writes_agent_loop_output_rows_fitted_to_verls_lengths(tool_tok, say, tmp_path):
    tasks = CalculatorEnv.default_tasks(2)

    def script(prompt, sampling):
        return say.call("submit", answer=0)

    policy = rg.Policy(engine=ScriptedEngine(script), tokenizer=tool_tok)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=tasks, n=2, concurrency=2)
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(tmp_path / "run"), "--format", "verl", "--response-length", "5"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "verl.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["uid"] for r in rows} == {t["task_id"] for t in tasks}
    for row in rows:
        assert len(row["response_ids"]) == len(row["response_mask"]) == len(row["response_logprobs"]) == 5
        assert row["extra_fields"]["rollgym_truncated"] is True and row["metrics"]["compute_score"] == 0.0
    bad = runner.invoke(app, ["export", str(tmp_path / "run"), "--format", "slurm"])
    assert (
        bad.exit_code == 2
        and "unknown format 'slurm': trl, verl, skyrl, openrlhf, verifiers, slime, areal or art" in bad.output
    )


def test_a_verl_outside_the_tested_range_is_refused_naming_the_range():
    assert require_trainer("verl", installed="0.9.1") == "0.9.1"
    with pytest.raises(UsageError, match=r"verl 0\.8\.0 is outside the versions .* tested with \(<0\.10,>=0\.9\.1\)"):
        require_trainer("verl", installed="0.8.0")
