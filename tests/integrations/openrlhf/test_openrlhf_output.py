"""rollgym's samples as OpenRLHF 0.11's agent-executor outputs, in rollgym's own venv (OpenRLHF's own code reads them
in test_openrlhf_own_code.py): whole-sequence ids, action ranges and unshifted logprobs token by token, the view
OpenRLHF's one-token shift makes of them, `max_len` cut as OpenRLHF's loop cuts, failures without actions, the
engine over vLLM's RequestOutput, labels, the export command and the version gate."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import InvalidOutputError
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import EngineError, UsageError
from rollgym.integrations.openrlhf import (
    OpenRLHFEngine,
    action_ranges,
    dataset_rows,
    executor_output,
    label_task,
    openrlhf_rows,
)
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.batch import run_rollouts


def calculator_rollouts(tool_tok, say, tasks):
    """Each task: `add` (a tool turn), then `submit` with the right answer: two turns, one bridge of tool ids."""

    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        task = tasks[(n - 1) // 2 % len(tasks)]
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=task["answer"])

    policy = rg.Policy(engine=ScriptedEngine(script, logprob=-0.25), tokenizer=tool_tok)
    return asyncio.run(run_rollouts("rollgym/Calculator-v0", tasks, policy, n=1, concurrency=1))


def shifted(out, max_len):
    """What `SamplesGenerator._process_response_into_experience` (samples_generator.py:253-269) makes of an output,
    in lists: sequences cut to `max_len`, the action mask and the logprobs shifted by one."""
    mask = [0] * len(out["observation_tokens"])
    for start, end in out["action_ranges"]:
        mask[start:end] = [1] * (end - start)
    return out["observation_tokens"][:max_len], mask[1:max_len], out["rollout_log_probs"][1:max_len]


def test_outputs_are_rollgyms_whole_sequence_ranges_and_unshifted_logprobs(tool_tok, say):
    rollouts = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(2))
    for rollout in rollouts:
        assert rollout.error is None and rollout.reward == 1.0 and len(rollout.turns) == 2
        view = rollout.token_view()
        out = executor_output(training_samples(rollout)[0], prompt="p", label="l")
        n = len(view["prompt_ids"])
        assert out["observation_tokens"] == view["prompt_ids"] + view["completion_ids"]
        first, second = rollout.turns
        a, bridge = len(first.completion_ids), len(first.bridge_ids)
        assert bridge > 0
        assert out["action_ranges"] == [(n, n + a), (n + a + bridge, n + a + bridge + len(second.completion_ids))]
        assert out["rollout_log_probs"] == [0.0] * n + view["logprobs"]  # index t is token t's logprob
        assert out["reward"] == out["scores"] == 1.0 and out["truncated"] is False
        assert out["extra_logs"] == {"rollgym/turns": 2.0, "rollgym/truncated": 0.0, "rollgym/failed": 0.0}
        assert all(isinstance(v, float) for v in out["extra_logs"].values())  # OpenRLHF makes each a tensor
        assert out["rollgym"]["rollout_id"] == rollout.id and out["rollgym"]["error"] is None
        # OpenRLHF's shift: position j of its action mask and rollout logprobs is token j + 1
        seq, mask, logprobs = shifted(out, 10_000)
        assert mask == [0] * (n - 1) + view["env_mask"] and len(mask) == len(logprobs) == len(seq) - 1
        for j, m in enumerate(mask):
            k = j + 1 - n  # token j + 1 is completion token k (a prompt token when k < 0)
            assert m == (view["env_mask"][k] if k >= 0 else 0)
            assert logprobs[j] == (view["logprobs"][k] if k >= 0 else 0.0)
            if m:
                assert seq[j + 1] == view["completion_ids"][k] and logprobs[j] == -0.25
    rows = openrlhf_rows([training_samples(r)[0] for r in rollouts])
    assert [r["label"] for r in rows] == sorted(r.group_id for r in rollouts)


def test_action_ranges_are_the_runs_of_the_env_mask():
    assert action_ranges([1, 1, 0, 0, 1, 0, 1], 5) == [(5, 7), (9, 10), (11, 12)]
    assert action_ranges([0, 0], 3) == [] and action_ranges([], 0) == []


def test_max_length_cuts_the_sequence_end_and_the_prompt_start_and_says_so(tool_tok, say):
    rollout = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))[0]
    sample = training_samples(rollout)[0]
    n = len(sample.prompt_ids)
    out = executor_output(sample, max_length=n + 7)
    assert out["observation_tokens"] == (sample.prompt_ids + sample.completion_ids)[: n + 7]
    assert out["action_ranges"] == [(n, n + 7)] and len(out["rollout_log_probs"]) == n + 7
    assert out["truncated"] is True and out["extra_logs"]["rollgym/truncated"] == 1.0
    tight = executor_output(sample, max_length=10)  # a prompt longer than max_len keeps its last ids, one id of room
    assert tight["observation_tokens"] == sample.prompt_ids[-9:] + sample.completion_ids[:1]
    assert tight["action_ranges"] == [(9, 10)] and tight["truncated"] is True
    roomy = executor_output(sample, max_length=10_000)
    assert roomy["truncated"] is False and roomy["observation_tokens"][n:] == sample.completion_ids


def test_a_failed_rollout_has_no_action_and_reward_zero(tool_tok, say):
    bad = [{"task_id": "no-answer", "question": "What is 1 + 1?"}]  # the Calculator refuses a task without an answer
    rollout = calculator_rollouts(tool_tok, say, bad)[0]
    assert rollout.error is not None
    out = executor_output(training_samples(rollout)[0])
    assert out["action_ranges"] == [] and out["reward"] == 0.0 and out["extra_logs"]["rollgym/failed"] == 1.0
    assert "answer" in out["rollgym"]["error"]


def test_weights_versions_are_kept_beside_the_output(tool_tok, say):
    rollout = calculator_rollouts(tool_tok, say, CalculatorEnv.default_tasks(1))[0]
    rollout.turns[0].policy_version, rollout.turns[1].policy_version = 3, 5
    meta = executor_output(training_samples(rollout)[0])["rollgym"]
    assert (meta["min_policy_version"], meta["max_policy_version"]) == (3, 5)


class Params(SimpleNamespace):
    """The vLLM `SamplingParams` fields OpenRLHF sets (samples_generator.py:199-207), plus `stop_token_ids`/`seed`."""


def openrlhf_params(**kw):
    base = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_tokens": None, "min_tokens": 1, "logprobs": None}
    return Params(**{**base, "skip_special_tokens": False, "stop_token_ids": None, "seed": None, **kw})


class RolloutActor:
    """Answers as OpenRLHF 0.11.2's `RolloutRayActor.generate` (vllm_engine.py:153-176): vLLM's final
    `RequestOutput`, `outputs[0]` with `token_ids`, `text`, `finish_reason` and `logprobs` (one dict per sampled id,
    id -> `Logprob(logprob=...)`, when `logprobs` is set); the ids come from `script`."""

    def __init__(self, script, finish_reason=None):
        self.script, self.finish_reason, self.requests = script, finish_reason, []

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.requests.append((list(prompt_token_ids), sampling_params))
        ids = list(self.script)[: sampling_params.max_tokens]
        reason = self.finish_reason or ("length" if len(ids) < len(self.script) else "stop")
        logprobs = [{t: SimpleNamespace(logprob=-0.5), 99: SimpleNamespace(logprob=-3.0)} for t in ids]
        completion = SimpleNamespace(
            token_ids=ids, text="", finish_reason=reason, logprobs=logprobs if sampling_params.logprobs else None
        )
        return SimpleNamespace(outputs=[completion])


def test_the_engine_copies_openrlhfs_params_asks_for_logprobs_and_maps_finish_reasons():
    base = openrlhf_params(temperature=0.7, stop_token_ids=[7])
    actor = RolloutActor([5, 6, 2])
    engine = OpenRLHFEngine(actor, base)
    gen = asyncio.run(engine.generate([1, 2, 3], SamplingParams(max_tokens=8, stop_token_ids=[2], seed=4)))
    assert gen.completion_ids == [5, 6, 2] and gen.finish_reason == "stop" and gen.stop_token_id == 2
    assert gen.logprobs == [-0.5] * 3 and gen.policy_version is None
    _, params = actor.requests[0]
    assert params is not base and base.max_tokens is None and base.logprobs is None  # OpenRLHF's object untouched
    assert params.max_tokens == 8 and params.logprobs == 1 and params.temperature == 0.7
    assert params.stop_token_ids == [7, 2] and params.seed == 4
    cut = asyncio.run(OpenRLHFEngine(RolloutActor([5, 6, 7]), base).generate([1], SamplingParams(max_tokens=2)))
    assert cut.finish_reason == "length" and cut.completion_ids == [5, 6]
    aborted = asyncio.run(OpenRLHFEngine(RolloutActor([], finish_reason="abort"), base).generate([1]))
    assert aborted.finish_reason == "abort" and aborted.completion_ids == []


def test_engine_output_without_logprobs_or_a_failed_request_is_an_engine_error():
    class NoLogprobs(RolloutActor):
        async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
            out = await super().generate(prompt_token_ids, sampling_params)
            out.outputs[0].logprobs = None
            return out

    with pytest.raises(InvalidOutputError, match="no logprobs"):
        asyncio.run(OpenRLHFEngine(NoLogprobs([5]), openrlhf_params()).generate([1]))

    class Dead:
        async def generate(self, *args, **kwargs):
            raise ConnectionError("engine 0 is gone")

    with pytest.raises(EngineError, match="OpenRLHF's engine failed the request: ConnectionError: engine 0 is gone"):
        asyncio.run(OpenRLHFEngine(Dead(), openrlhf_params()).generate([1, 2]))
    assert copy.deepcopy(openrlhf_params()).logprobs is None


def test_dataset_rows_carry_the_environment_and_the_task_in_the_label():
    tasks = CalculatorEnv.default_tasks(2)
    rows = dataset_rows("rollgym/Calculator-v0", tasks)
    assert [label_task(r["label"], None) for r in rows] == [("rollgym/Calculator-v0", t) for t in tasks]
    assert rows[0]["input"] == tasks[0]["question"] and json.loads(rows[1]["label"])["task_id"] == tasks[1]["task_id"]
    assert label_task({"task": json.dumps(tasks[0])}, "rollgym/Calculator-v0") == ("rollgym/Calculator-v0", tasks[0])
    with pytest.raises(UsageError, match="not JSON"):
        label_task("7 + 5", "rollgym/Calculator-v0")
    with pytest.raises(UsageError, match="no environment for this row"):
        label_task({"task": {}}, None)
    with pytest.raises(UsageError, match="the label.s task must be the task as a dict"):
        label_task({"env_id": "x", "task": 3}, None)


def test_export_writes_executor_outputs_fitted_to_max_len_in_group_order(tool_tok, say, tmp_path):
    tasks = CalculatorEnv.default_tasks(2)

    def script(prompt, sampling):
        return say.call("submit", answer=0)

    policy = rg.Policy(engine=ScriptedEngine(script), tokenizer=tool_tok)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=tasks, n=2, concurrency=2)
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(tmp_path / "run"), "--format", "openrlhf", "--max-length", "60"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "openrlhf.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and [r["label"] for r in rows] == sorted(t["task_id"] for t in tasks for _ in range(2))
    for row in rows:
        assert len(row["observation_tokens"]) == len(row["rollout_log_probs"]) <= 60
        assert row["truncated"] is True and row["action_ranges"][-1][1] == 60


def test_an_openrlhf_outside_the_tested_range_is_refused_naming_the_range():
    assert require_trainer("openrlhf", installed="0.11.2") == "0.11.2"
    with pytest.raises(UsageError, match=r"openrlhf 0\.10\.0 is outside the versions .* \(<0\.12,>=0\.11\.2\)"):
        require_trainer("openrlhf", installed="0.10.0")
    if importlib.util.find_spec("openrlhf") is None:  # rollgym's venv: OpenRLHF lives in its own
        with pytest.raises(UsageError, match=r"openrlhf is not installed: .* with openrlhf<0\.12,>=0\.11\.2"):
            require_trainer("openrlhf")
