"""`Policy`: one spec gives the engine, its certified tokenizer, stop ids and pad id; it closes what it opened."""

from __future__ import annotations

import pickle

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine


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
    from rollgym.engines import UnknownEngineError

    with pytest.raises(UnknownEngineError, match="Did you mean"):
        rg.Policy("smollm2-135")


def test_a_chat_engine_policy_has_no_tokenizer():
    policy = rg.Policy("openai:http://127.0.0.1:9/v1#gpt-4o-mini")
    assert policy.token_exact is False and policy.tokenizer is None and policy.stop_token_ids == []
    with pytest.raises(rg.UsageError, match="chat engine"):
        policy.pad_token_id  # noqa: B018 - the property's getter is what raises
    with pytest.raises(rg.UsageError, match="token-in/token-out"):
        rg.RecordingProxy(policy)


def test_model_dir_resolves_the_default_model():
    from pathlib import Path

    path = Path(rg.model_dir("smollm2-135m"))
    assert (path / "config.json").exists()
    with pytest.raises(rg.UsageError):
        rg.model_dir("vllm:http://127.0.0.1:8000/v1")


async def test_a_spec_string_works_wherever_a_policy_does(say, tool_tok):
    rollout = await rg.rollout(
        "rollgym/Calculator-v0",
        rg.Policy(engine=ScriptedEngine([say.call("submit", answer=1)]), tokenizer=tool_tok),
        task={"task_id": "t", "question": "1?", "answer": 1},
    )
    assert rollout.reward == 1.0 and rollout.env_id == "rollgym/Calculator-v0" and rollout.task_id == "t"


class _CountingEngine(ScriptedEngine):
    """A scripted engine that counts how many were built and closed (registered as `counting:`)."""

    built: list = []

    def __init__(self, rest: str, script=None):
        super().__init__(script or (lambda prompt, sampling: _CountingEngine.reply))
        self.closed = False
        _CountingEngine.built.append(self)

    async def aclose(self) -> None:
        self.closed = True
        await super().aclose()


@pytest.fixture
def counting(say):
    from rollgym.engines import register_engine

    _CountingEngine.built, _CountingEngine.reply = [], say.call("submit", answer=1)
    register_engine(
        "counting",
        _CountingEngine,
        example="counting:x",
        summary="test engine",
        tokenizer_source=lambda rest: "smollm2-135m",
    )
    return _CountingEngine


def test_trl_adapter_builds_and_closes_the_engine_every_step_and_groups_repeats(counting):
    import json
    from types import SimpleNamespace

    trainer = SimpleNamespace(args=SimpleNamespace(max_completion_length=32, temperature=1.0, top_p=1.0, top_k=0))
    rollout_func = rg.make_rollout_func("rollgym/Calculator-v0", rg.Policy("counting:x"))
    task = {"task_id": "q1", "question": "1?", "answer": 1}  # TRL repeats a prompt: the repeats form one group
    prompts = [json.dumps(task), json.dumps(task), json.dumps(dict(task, task_id="q2", answer=2))]
    for _ in range(2):  # each TRL step is its own event loop: its engine must not outlive it
        columns = rollout_func(prompts, trainer)
        assert columns["reward"] == [1.0, 1.0, 0.0]
    assert len(counting.built) == 2 and all(e.closed for e in counting.built)
    last = rollout_func.last_rollouts
    assert [r.sample_index for r in last] == [0, 1, 0] and last[0].group_id == last[1].group_id != last[2].group_id
    with pytest.raises(rg.UsageError, match="chat_template"):
        rg.make_rollout_func("rollgym/Calculator-v0", rg.Policy("counting:x"), chat_template="x.jinja")


def test_a_proxy_in_a_thread_closes_the_policy_it_built(counting):
    import openai

    with rg.RecordingProxy("counting:x").in_thread() as proxy:
        session = proxy.session()
        client = openai.OpenAI(base_url=session.base_url, api_key="x")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=40)
    assert len(counting.built) == 1 and counting.built[0].closed
    assert len(session.rollouts()) == 1


def test_a_spec_is_checked_when_the_policy_is_made():
    from rollgym.engines import UnknownEngineError

    with pytest.raises(UnknownEngineError, match="needs the server URL"):
        rg.Policy("vllm:localhost:8000/v1#smollm2-135m")
    with pytest.raises(UnknownEngineError, match="needs #MODEL"):
        rg.Policy("openai:http://127.0.0.1:9/v1")


async def test_a_policy_whose_engine_cannot_be_built_fails_the_call_before_any_environment(tool_tok):
    from rollgym.engines import ModelUnavailableError

    with pytest.raises(ModelUnavailableError):
        await rg.run_rollouts(
            "rollgym/Calculator-v0",
            [{"task_id": "t", "question": "1?", "answer": 1}],
            rg.Policy("hf:/no-such-model-dir", tokenizer=tool_tok),
        )


async def test_an_engine_factory_builds_anew_after_each_close_and_stays_in_its_process(tool_tok, say):
    built = []

    def build():
        built.append(ScriptedEngine([say.text("hi")]))
        return built[-1]

    policy = rg.Policy(engine_factory=build, tokenizer=tool_tok)
    assert built == [] and policy.token_exact and policy.name == "build"  # naming it builds nothing
    async with policy:
        assert policy.engine is built[0]
    assert policy.engine is built[1]
    with pytest.raises(rg.UsageError, match="cannot leave this process"):
        pickle.dumps(policy)
    with pytest.raises(rg.UsageError, match="exactly one"):
        rg.Policy("smollm2-135m", engine_factory=build)


def test_truncation_is_a_policy_option_and_a_turn_cut_by_its_budget_is_closed_not_the_end(say, tmp_path):
    """With `truncation="close"` a turn cut by its token budget is closed (masked end token) and the episode goes on;
    under the default `end` the rollout stops there (`truncated_completion`). Settable on `rg.Policy` and
    `rg.generate` (for a spec), refused when unknown."""
    import asyncio

    import rollgym as rg
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.errors import UsageError

    class Chatty(rg.Env):
        """Answers every text reply and goes on."""

        async def setup(self, task):
            return [{"role": "user", "content": "Talk."}], {"task_id": "chatty"}

        async def on_text_reply(self, message):
            return [{"role": "user", "content": "Go on."}], False

        async def compute_reward(self):
            return 0.0, {}

    long_reply = say.text("one two three four five six seven eight nine ten")[:-1]  # no end token: cut by max_tokens
    limits = rg.Limits(max_turns=3, max_tokens_per_turn=4)

    def rollout_with(truncation):
        policy = rg.Policy(
            engine=ScriptedEngine(lambda p, s: long_reply), tokenizer="smollm2-135m", truncation=truncation
        )
        return asyncio.run(rg.rollout(Chatty(), policy, limits=limits))

    ended, closed = rollout_with("end"), rollout_with("close")
    assert ended.stop_reason == "truncated_completion" and len(ended.turns) == 1
    assert closed.stop_reason == "max_turns" and len(closed.turns) == 3  # every cut turn closed, the episode went on
    view = closed.token_view()
    assert len(view["completion_ids"]) == len(view["env_mask"]) and 0 in view["env_mask"]
    with pytest.raises(UsageError, match="truncation must be 'end'.*or 'close'"):
        rg.Policy("smollm2-135m", truncation="cut")
    made = rg.Policy("smollm2-135m")
    with pytest.raises(UsageError, match="made without truncation='close'"):
        rg.generate("rollgym/Calculator-v0", made, out=tmp_path / "x", num_tasks=1, truncation="close")
