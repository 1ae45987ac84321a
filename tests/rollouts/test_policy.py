"""`Policy`: one spec gives the engine, its certified tokenizer, stop ids and pad id; it closes what it opened."""

from __future__ import annotations

import pickle

import pytest

import rollgym as rg
from rollgym.rollouts.engines.scripted import ScriptedEngine


def test_a_spec_gives_a_certified_tokenizer_now_and_the_engine_on_first_use(tool_tok):
    policy = rg.Policy("smollm2-135m")
    assert policy.tokenizer is not None and policy.tokenizer.supports_tools  # ChatML + tools fallback, certified
    assert policy._engine is None  # nothing loaded yet
    assert policy.stop_token_ids == tool_tok.stop_token_ids and policy.pad_token_id == tool_tok.hf.pad_token_id
    again = pickle.loads(pickle.dumps(policy))
    assert again.spec == "smollm2-135m" and again.tokenizer.stop_token_ids == policy.tokenizer.stop_token_ids
    assert repr(again) == "Policy('smollm2-135m')"


@pytest.mark.slow
async def test_async_with_closes_the_engine_it_built_and_a_later_use_builds_another():
    policy = rg.Policy("smollm2-135m")
    async with policy:
        first = policy.engine
        assert first.model and policy.engine is first
    assert policy._engine is None
    assert pickle.loads(pickle.dumps(policy))._engine is None  # a built engine never crosses a process
    second = policy.engine
    assert second is not first
    await policy.aclose()


async def test_an_engine_given_is_used_as_is_and_never_closed_by_the_policy(tool_tok, say):
    engine = ScriptedEngine([say.text("hi")])
    closed = []
    engine.aclose = lambda: closed.append(1) or _noop()
    async with rg.Policy(engine=engine, tokenizer=tool_tok) as policy:
        assert policy.engine is engine and policy.tokenizer is tool_tok
    assert closed == [] and policy.engine is engine


async def _noop():
    return None


def test_wrong_combinations_are_usage_errors(tool_tok, say):
    with pytest.raises(rg.UsageError, match="either a spec"):
        rg.Policy()
    with pytest.raises(rg.UsageError, match="either a spec"):
        rg.Policy("smollm2-135m", engine=ScriptedEngine([]))
    with pytest.raises(rg.UsageError, match="tokenizer="):
        rg.Policy(engine=ScriptedEngine([]))
    with pytest.raises(rg.UsageError, match="#MODEL"):
        rg.Policy("vllm:http://127.0.0.1:8000/v1")
    from rollgym.rollouts.engines import UnknownEngineError

    with pytest.raises(UnknownEngineError, match="Did you mean"):
        rg.Policy("smollm2-135")


def test_a_chat_engine_policy_has_no_tokenizer():
    policy = rg.Policy("openai:http://127.0.0.1:9/v1#gpt-4o-mini")
    assert policy.token_exact is False and policy.tokenizer is None and policy.stop_token_ids == []
    with pytest.raises(rg.UsageError, match="chat engine"):
        policy.pad_token_id  # noqa: B018
    with pytest.raises(rg.UsageError, match="token-in/token-out"):
        rg.RecordingProxy(policy)


def test_model_dir_resolves_the_default_model():
    from pathlib import Path

    path = Path(rg.model_dir("smollm2-135m"))
    assert (path / "config.json").exists()
    with pytest.raises(rg.UsageError):
        rg.model_dir("vllm:http://127.0.0.1:8000/v1")


async def test_a_spec_string_works_wherever_a_policy_does(say, tool_tok):
    rollout = await rg.rollout("rollgym/Calculator-v0", rg.Policy(engine=ScriptedEngine([say.call("submit", answer=1)]),
                                                                  tokenizer=tool_tok), task={"task_id": "t", "question": "1?", "answer": 1})
    assert rollout.reward == 1.0 and rollout.env_id == "rollgym/Calculator-v0" and rollout.task_id == "t"
