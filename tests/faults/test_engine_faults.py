"""Engine faults and malformed completions in a batch (issue 17's fault suite): over real HTTP to the vLLM
stand-in, each fault switch fails every rollout of a batch of 4 with its own category and a sentence that
says what happened, loses and duplicates none, and a hang ends at the rollout's time limit. Malformed tool
calls are told to the model and the episode goes on to its reward."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin

from rollgym.engines import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.engines.vllm_server import VLLMServerEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.output import is_infra_failure
from rollgym.rollouts.policy import Policy

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
TASKS = CalculatorEnv.default_tasks(2)


@pytest.fixture(scope="module")
def standin(tool_tok):
    app, control = make_vllm_standin(
        MODEL,
        max_model_len=8192,
        vocab_size=len(tool_tok.hf),
        eos_token_id=tool_tok.end_of_turn_id,
        tokenizer=tool_tok.hf,
    )
    with LoopbackServer(app) as server:
        yield server, control


def _batch(policy: Policy, limits: Limits | None = None, concurrency: int = 4):
    t0 = time.monotonic()
    rollouts = asyncio.run(
        run_rollouts(
            "rollgym/Calculator-v0",
            TASKS,
            policy,
            n=2,
            concurrency=concurrency,
            limits=limits or Limits(max_turns=2, max_tokens_per_turn=8),
            sampling=SamplingParams(seed=0),
        )
    )
    assert len(rollouts) == len({r.key for r in rollouts}) == 4, "a rollout was lost or duplicated"
    return rollouts, time.monotonic() - t0


@pytest.mark.parametrize(
    "switch,value,category,says",
    [
        ("fail_next", 10_000, "engine", "HTTP 503"),
        ("nan_logprob", "literal", "engine", "logprob"),
        ("nan_logprob", "null", "engine", "logprob"),
        ("drop_last_logprob", True, "engine", "logprob"),
        ("corrupt_echo", True, "engine", "prompt"),
        ("finish_reason", "abort", "engine", "abort"),
        ("delay_s", 30.0, "timeout", "wall-clock limit"),
    ],
    ids=["503", "nan-literal", "nan-null", "missing-logprob", "corrupt-echo", "abort", "hang"],
)
def test_an_engine_fault_fails_each_rollout_with_its_category(standin, tool_tok, switch, value, category, says):
    server, control = standin
    control.__init__()
    setattr(control, switch, value)
    engine = VLLMServerEngine(f"{server.base_url}/v1", MODEL, max_retries=1, backoff_s=0.01, timeout_s=60)
    rollouts, took = _batch(
        Policy(engine=engine, tokenizer=tool_tok), Limits(max_turns=2, max_tokens_per_turn=8, timeout_s=3)
    )
    assert len(rollouts) == 4
    for r in rollouts:
        assert r.stop_reason in ("error", "timeout") and r.error is not None, r
        assert r.error.category == category and says.lower() in r.error.message.lower(), r.error
        assert is_infra_failure(r) == (category == "engine")
    assert took < 30, f"the batch took {took:.0f} s"


def test_the_server_killed_mid_batch_fails_the_rest_as_engine_errors(tool_tok):
    """Rollouts one at a time; the server goes away after the first: that one is kept, the others are
    recorded as unreachable-engine errors (infrastructure: a resume runs them again)."""
    import threading

    app, control = make_vllm_standin(
        MODEL,
        max_model_len=8192,
        vocab_size=len(tool_tok.hf),
        eos_token_id=tool_tok.end_of_turn_id,
        tokenizer=tool_tok.hf,
    )
    server = LoopbackServer(app).__enter__()
    engine = VLLMServerEngine(f"{server.base_url}/v1", MODEL, max_retries=1, backoff_s=0.01)
    control.delay_s = 0.5
    threading.Timer(0.2, server.__exit__, args=(None, None, None)).start()  # while the first request is in flight
    rollouts, _ = _batch(Policy(engine=engine, tokenizer=tool_tok), concurrency=1)
    failed = [r for r in rollouts if r.error is not None]
    assert len(failed) >= 3, "the rollouts after the first met no server"
    assert all(r.error.category == "engine" and "could not reach" in r.error.message for r in failed), [
        r.error for r in failed
    ]
    assert all(is_infra_failure(r) for r in failed)


@pytest.mark.parametrize(
    "arguments,says",
    [
        ('{"answer": ' + "9" * 5000 + "}", "digits"),
        ('{"answer": ' + "[" * 5000 + "]" * 5000 + "}", "nest"),
        ('{"answer": 4', "JSON"),
    ],
    ids=["5000-digit-int", "5000-deep", "truncated-json"],
)
@pytest.mark.slow
def test_a_malformed_tool_call_is_told_to_the_model_and_the_episode_goes_on(tool_tok, arguments, says):
    answers = {t["question"]: t["answer"] for t in TASKS}

    def reply(prompt, sampling):
        text = tool_tok.hf.decode(prompt)
        if text.count("<|im_start|>assistant") == 1:  # the first turn
            body = '<tool_call>\n{"name": "submit", "arguments": ' + arguments + "}\n</tool_call>"
        else:
            question = next(q for q in answers if q in text)
            body = (
                "<tool_call>\n"
                + json.dumps({"name": "submit", "arguments": {"answer": answers[question]}})
                + "\n</tool_call>"
            )
        return tool_tok.encode(body) + [tool_tok.end_of_turn_id]

    rollouts, _ = _batch(
        Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok), Limits(max_turns=3, max_tokens_per_turn=16384)
    )
    for r in rollouts:
        assert r.error is None, r.error
        assert r.reward == 1.0 and len(r.turns) == 2
        told = json.dumps(r.turns[0].env_messages)
        assert says.lower() in told.lower(), told[:500]
