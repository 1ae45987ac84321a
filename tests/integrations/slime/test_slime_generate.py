"""slime's live hook (`rollgym.integrations.slime.generate.generate`, a `--custom-generate-function-path` function)
against slime's contract: called as slime's `generate_and_rm` calls it, with slime's `Sample` (its dataclass as
THUDM/slime 624b824 defines it, slime_types.py) and slime's sampling dict, sampling through a server that answers
sglang's `/generate` field for field (tests/support/sglang.py), driven by the real SmolLM2-135M or a scripted engine.
slime itself is not on PyPI and needs sglang and Megatron, so its own code is not run."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

import pytest
from slime_types import Sample
from support.sglang import SglangStandIn

from rollgym.engines.default_model import smollm2_dir
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.slime import dataset_rows
from rollgym.integrations.slime.generate_function import rollgym_generate as generate
from rollgym.integrations.training_samples import training_samples
from rollgym.rollouts.output import read_rollouts

#: slime's sampling dict (slime/rollout/sglang_rollout.py:95-105) with a response budget of 256 ids
SLIME_PARAMS = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": -1,
    "max_new_tokens": 256,
    "stop": None,
    "stop_token_ids": None,
    "skip_special_tokens": False,
    "no_stop_trim": True,
    "spaces_between_special_tokens": False,
}


def slime_args(host: str, port: int, **kw) -> argparse.Namespace:
    """The slime arguments the hook reads (slime/utils/arguments.py): the checkpoint and the router's address."""
    return argparse.Namespace(
        hf_checkpoint=str(smollm2_dir()), sglang_router_ip=host, sglang_router_port=port, router_policy=None, **kw
    )


def slime_sample_of(row: dict, index: int = 0) -> Sample:
    """The `Sample` slime's `Dataset` builds from a row (slime/utils/data.py:237-276: prompt and metadata)."""
    return Sample(group_index=0, index=index, prompt=row["input"], metadata=dict(row["metadata"]), session_id="s-1")


def recorded(folder) -> list:
    return [r for path in sorted(folder.glob("rollouts-*.jsonl")) for r in read_rollouts(path)]


def calculator_script(say, stand):
    """`add` (a tool turn), then `submit` 3 (the first default task's answer is checked below); the server's weights
    version moves from 7 to 8 between the two calls."""

    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        if n == 2:
            stand.weight_version = "8"
        return say.call("add", a=1, b=2) if n % 2 else say.call("submit", answer=script.answer)

    return script


def test_the_hook_fills_slimes_sample_from_slimes_router_token_by_token(say, tmp_path, monkeypatch):
    monkeypatch.setenv("ROLLGYM_RECORD_DIR", str(tmp_path / "records"))
    task = CalculatorEnv.default_tasks(1)[0]
    [row] = dataset_rows("rollgym/Calculator-v0", [task])
    assert json.loads(row["metadata"]["task"]) == task and row["input"]

    async def main():
        stand = SglangStandIn(None, weight_version="7")
        script = calculator_script(say, stand)
        script.answer = task["answer"]
        stand.engine = ScriptedEngine(script, logprob=-0.25)
        async with stand as (host, port):
            sample = await generate(slime_args(host, port), slime_sample_of(row), dict(SLIME_PARAMS))
        return sample, stand.requests

    sample, requests = asyncio.run(main())
    [rollout] = recorded(tmp_path / "records")
    [trained] = training_samples(rollout)
    assert rollout.error is None and rollout.reward == 1.0 and len(rollout.turns) == 2
    sample.validate_response_metadata_lengths()
    n = sample.response_length
    assert sample.tokens == trained.prompt_ids + trained.completion_ids and n == len(trained.completion_ids)
    assert sample.loss_mask == trained.env_mask and 0 in sample.loss_mask  # the tool result's ids are masked
    assert sample.status is Sample.Status.COMPLETED and sample.reward == 1.0 and sample.remove_sample is False
    assert sample.weight_versions == ["7", "8"] and [t.policy_version for t in rollout.turns] == [7, 8]
    assert sample.index == 0 and sample.group_index == 0 and sample.prompt == row["input"]
    assert sample.metadata["env_id"] == "rollgym/Calculator-v0" and sample.metadata["rollgym_error"] is None
    # each request went to slime's router as slime's generate sends it, and its answer sits in the response, trained
    response_start = len(sample.tokens) - n
    for request in requests:
        assert request["return_logprob"] is True and request["sampling_params"]["no_stop_trim"] is True
        prompt = request["input_ids"]
        assert sample.tokens[: len(prompt)] == prompt  # token-in: every turn's prompt is the sample's prefix
    first, second = rollout.turns
    assert requests[0]["input_ids"] == trained.prompt_ids
    assert requests[1]["input_ids"] == sample.tokens[: len(requests[1]["input_ids"])]
    for turn, request in zip(rollout.turns, requests, strict=True):
        at = len(request["input_ids"]) - response_start  # the turn's first response id
        span = slice(at, at + len(turn.completion_ids))
        assert sample.tokens[response_start:][span] == turn.completion_ids
        assert sample.loss_mask[span] == [1] * len(turn.completion_ids)
        assert sample.rollout_log_probs[span] == [-0.25] * len(turn.completion_ids)  # response-only, unshifted
    assert all(lp == 0.0 for lp, m in zip(sample.rollout_log_probs, sample.loss_mask, strict=True) if not m)
    # slime's response budget counts from the first prompt, as slime's generate subtracts response_length
    used = len(requests[1]["input_ids"]) - len(requests[0]["input_ids"])
    assert requests[1]["sampling_params"]["max_new_tokens"] == 256 - used < 256
    assert first.completion_ids and second.completion_ids


def test_a_bad_row_or_a_dead_router_is_a_failed_removed_sample_never_an_exception(tmp_path):
    async def main():
        bad_env = {"input": "q", "metadata": {"env_id": "rollgym/NoSuchEnv-v0", "task": json.dumps({"question": "q"})}}
        refused = dataset_rows("rollgym/Calculator-v0", [{"task_id": "no-answer", "question": "1 + 1?"}])[0]
        stand = SglangStandIn(ScriptedEngine([[1, 2]]))
        async with stand as (host, port):
            out = [
                await generate(slime_args(host, port), slime_sample_of(r), dict(SLIME_PARAMS))
                for r in (bad_env, refused)
            ]
        with socket.socket() as free:  # a port nobody listens on: slime's router is down
            free.bind(("127.0.0.1", 0))
            dead_port = free.getsockname()[1]
        good = dataset_rows("rollgym/Calculator-v0", CalculatorEnv.default_tasks(1))[0]
        out.append(await generate(slime_args("127.0.0.1", dead_port), slime_sample_of(good), dict(SLIME_PARAMS)))
        return out, stand.requests

    (unknown, refused, dead), requests = asyncio.run(main())
    assert requests == []  # neither a bad environment nor a refused task reached the router
    for sample in (unknown, refused, dead):
        sample.validate_response_metadata_lengths()
        assert sample.status is Sample.Status.FAILED and sample.remove_sample is True and sample.reward == 0.0
        assert sample.loss_mask == [0] * sample.response_length and sample.response_length >= 1
        assert sample.tokens and sample.metadata["rollgym_error"]
    assert "NoSuchEnv" in unknown.metadata["rollgym_error"] and "rollgym_traceback" in unknown.metadata
    assert "answer" in refused.metadata["rollgym_error"]
    assert "slime's router failed" in dead.metadata["rollgym_error"]  # an infrastructure failure, named as one


def test_a_turn_sglang_aborted_is_an_aborted_sample_as_slime_marks_one():
    row = dataset_rows("rollgym/Calculator-v0", CalculatorEnv.default_tasks(1))[0]

    async def main():
        async with SglangStandIn(None, abort=True) as (host, port):
            return await generate(slime_args(host, port), slime_sample_of(row), dict(SLIME_PARAMS))

    sample = asyncio.run(main())
    sample.validate_response_metadata_lengths()
    assert sample.status is Sample.Status.ABORTED and sample.remove_sample is True  # slime drops it from the step
    assert sample.loss_mask == [0] * sample.response_length and "abort" in sample.metadata["rollgym_error"]


@pytest.mark.slow
def test_the_hook_on_the_real_smollm2_behind_sglangs_generate(tmp_path, monkeypatch):
    from rollgym.engines.transformers_engine import TransformersEngine

    monkeypatch.setenv("ROLLGYM_RECORD_DIR", str(tmp_path / "records"))
    monkeypatch.setenv("ROLLGYM_MAX_TURNS", "2")
    rows = dataset_rows("rollgym/Calculator-v0", CalculatorEnv.default_tasks(1))
    params = {**SLIME_PARAMS, "max_new_tokens": 24, "top_k": 20}

    async def main():
        engine = TransformersEngine(str(smollm2_dir()), model_name="smollm2-135m")
        stand = SglangStandIn(engine, weight_version="3")
        try:
            async with stand as (host, port):
                return await generate(slime_args(host, port), slime_sample_of(rows[0]), params), stand.requests
        finally:
            await engine.aclose()

    sample, requests = asyncio.run(main())
    [rollout] = recorded(tmp_path / "records")
    assert rollout.error is None and rollout.turns and rollout.engine == "slime"
    [trained] = training_samples(rollout)
    sample.validate_response_metadata_lengths()
    assert sample.tokens == trained.prompt_ids + trained.completion_ids and sample.loss_mask == trained.env_mask
    assert sample.weight_versions == ["3"] and sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED)
    assert requests[0]["sampling_params"]["top_k"] == 20  # slime's sampling stays slime's
    response_start = len(sample.tokens) - sample.response_length
    for turn, request in zip(rollout.turns, requests, strict=True):
        at = len(request["input_ids"]) - response_start
        assert sample.rollout_log_probs[at : at + len(turn.completion_ids)] == turn.logprobs
        assert turn.logprobs and all(lp <= 0.0 for lp in turn.logprobs)
