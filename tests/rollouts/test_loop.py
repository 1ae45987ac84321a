"""The rollout loop on the real tokenizer and real environments: every stop condition and error category."""

from __future__ import annotations

import asyncio

import pytest

from rollgym.engines import EngineError, SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs import make
from rollgym.limits import Limits
from rollgym.rollouts.loop import run_rollout
from rollgym.rollouts.policy import Policy

TASK = {"task_id": "calc-1", "question": "What is (2 + 3) * 4?", "answer": 20}


def calc():
    return make("rollgym/Calculator-v0").unwrapped


async def test_scripted_episode_is_token_exact_and_rewarded(tool_tok, say):
    script = [say.call("add", a=2, b=3), say.call("multiply", a=5, b=4), say.call("submit", answer=20)]
    engine = ScriptedEngine(script)
    r = await run_rollout(
        calc(),
        Policy(engine=engine, tokenizer=tool_tok),
        TASK,
        env_id="rollgym/Calculator-v0",
        group_id="g",
        sample_index=3,
    )
    assert r.error is None and r.stop_reason == "env_terminated"
    assert r.reward == 1.0 and r.reward_components["correct"] == 1.0
    assert [t.tool_calls[0].name for t in r.turns] == ["add", "multiply", "submit"]
    assert [t.tool_calls[0].result for t in r.turns] == ["5", "20", "Submitted 20."]
    view = r.token_view()
    sampled = [i for i, m in zip(view["completion_ids"], view["env_mask"], strict=True) if m]
    assert sampled == sum(script, [])  # exactly the ids the engine emitted, in order
    assert view["completion_ids"][-1] == tool_tok.end_of_turn_id and view["env_mask"][-1] == 1
    assert len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"])
    # Each turn's prompt was the previous prompt + completion + bridge: rebuild and compare.
    full = view["prompt_ids"] + view["completion_ids"]
    for turn in r.turns:
        assert full[turn.prompt_len : turn.prompt_len + len(turn.completion_ids)] == turn.completion_ids
    msgs = r.messages()
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert r.key == ("calc-1", 3) and r.group_id == "g" and r.token_exact
    assert r.metrics()["tool_calls/add"] == 1.0 and r.metrics()["sampled_tokens"] == len(sampled)
    assert r.model_validate_json(r.model_dump_json()) == r


async def test_malformed_call_is_shown_to_the_model_and_the_loop_goes_on(tool_tok, say):
    bad = tool_tok.encode('<tool_call>\n{"name": "add", "arguments": {"a": 2 "b": 3}}\n</tool_call>') + [
        tool_tok.end_of_turn_id
    ]
    r = await run_rollout(
        calc(),
        Policy(
            engine=ScriptedEngine([bad, say.call("add", a="two", b=3), say.call("submit", answer=20)]),
            tokenizer=tool_tok,
        ),
        TASK,
    )
    assert r.stop_reason == "env_terminated" and r.reward == 1.0
    first, second = r.turns[0], r.turns[1]
    assert first.parse_errors and "not valid JSON" in first.env_messages[0]["content"]
    assert second.tool_calls[0].failed and "a" in second.tool_calls[0].result  # wrong argument type, explained
    assert tool_tok.hf.decode(first.bridge_ids).count("could not be parsed") == 1


@pytest.mark.parametrize(
    "arguments,why",
    [
        ('{"a": ' + "9" * 5000 + ', "b": 3}', "4300 digits"),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + ', "b": 3}', "nested too deeply"),
    ],
)
async def test_arguments_pythons_json_refuses_are_parse_errors_told_to_the_model(tool_tok, say, arguments, why):
    """A 5,000-digit integer or 5,000-deep nesting is the model's malformed call, not a crashed rollout."""
    odd = tool_tok.encode(f'<tool_call>\n{{"name": "add", "arguments": {arguments}}}\n</tool_call>') + [
        tool_tok.end_of_turn_id
    ]
    r = await run_rollout(
        calc(),
        Policy(engine=ScriptedEngine([odd, say.call("submit", answer=20)]), tokenizer=tool_tok),
        TASK,
        limits=Limits(max_tokens_per_turn=len(odd)),
    )
    assert r.error is None and r.stop_reason == "env_terminated" and r.reward == 1.0
    assert why in r.turns[0].parse_errors[0] and why in r.turns[0].env_messages[0]["content"]
    rec = await calc().toolset.call(
        {"id": "c", "function": {"name": "add", "arguments": arguments}}
    )  # as a JSON string
    assert rec.failed and rec.error_kind == "bad_json" and why in rec.result


async def test_text_answer_stops_with_no_tool_call(tool_tok, say):
    r = await run_rollout(
        calc(), Policy(engine=ScriptedEngine([say.text("The answer is 20.")]), tokenizer=tool_tok), TASK
    )
    assert r.stop_reason == "no_tool_call" and r.reward == 1.0 and r.error is None


async def test_max_turns_then_final_reward(tool_tok, say):
    engine = ScriptedEngine(lambda prompt, s: say.call("add", a=1, b=1))
    r = await run_rollout(calc(), Policy(engine=engine, tokenizer=tool_tok), TASK, limits=Limits(max_turns=3))
    assert r.stop_reason == "max_turns" and r.truncated and len(r.turns) == 3
    assert r.reward == 0.0 and r.reward_components == {"correct": 0.0, "submitted": 0.0}
    assert r.token_view()["env_mask"][-1] == 1  # ends on the model's own end-of-turn token


async def test_env_truncation(tool_tok, say):
    env = make("rollgym/Calculator-v0", max_turns=2)
    r = await run_rollout(
        env, Policy(engine=ScriptedEngine(lambda p, s: say.call("add", a=1, b=1)), tokenizer=tool_tok), TASK
    )
    assert r.stop_reason == "env_truncated" and len(r.turns) == 2 and r.truncated


async def test_context_limit_never_sends_a_prompt_that_cannot_fit(tool_tok, say):
    engine = ScriptedEngine(lambda p, s: say.call("add", a=1, b=1))
    first = await run_rollout(
        calc(),
        Policy(engine=ScriptedEngine([say.call("add", a=1, b=1)]), tokenizer=tool_tok),
        TASK,
        limits=Limits(max_turns=1),
    )
    limit = first.turns[0].prompt_len + 60
    r = await run_rollout(calc(), Policy(engine=engine, tokenizer=tool_tok), TASK, limits=Limits(max_model_len=limit))
    assert r.stop_reason == "context_limit" and r.truncated
    assert all(t.prompt_len + len(t.completion_ids) <= limit for t in r.turns)


async def test_token_budget(tool_tok, say):
    call = say.call("add", a=1, b=1)
    r = await run_rollout(
        calc(),
        Policy(engine=ScriptedEngine(lambda p, s: call), tokenizer=tool_tok),
        TASK,
        limits=Limits(max_total_tokens=2 * len(call)),
    )
    assert r.stop_reason == "token_budget" and sum(len(t.completion_ids) for t in r.turns) == 2 * len(call)


async def test_truncated_completion_ends_the_rollout(tool_tok, say):
    r = await run_rollout(
        calc(),
        Policy(engine=ScriptedEngine([say.text("a long answer " * 20)]), tokenizer=tool_tok),
        TASK,
        limits=Limits(max_tokens_per_turn=5),
    )
    assert r.stop_reason == "truncated_completion" and r.truncated and len(r.turns[0].completion_ids) == 5
    assert r.turns[0].finish_reason == "length"


async def test_timeout_is_recorded_and_env_scored(tool_tok, say):
    engine = ScriptedEngine(lambda p, s: say.call("add", a=1, b=1), delay_s=0.2)
    r = await run_rollout(calc(), Policy(engine=engine, tokenizer=tool_tok), TASK, limits=Limits(timeout_s=0.5))
    assert r.stop_reason == "timeout" and r.error.category == "timeout" and "0.5s" in r.error.message


def test_rollouts_have_a_wall_clock_limit_unless_told_otherwise(monkeypatch):
    """Issue 17, item 11: a hung engine or tool ends as `timeout` after 30 min, not after as long as the
    engine's own request timeout allows turn after turn; `rollgym generate --timeout 0` means none."""
    from typer.testing import CliRunner

    import rollgym.cli.generate as generate_module
    from rollgym.cli import app

    assert Limits().timeout_s == 1800.0 and Limits(timeout_s=None).timeout_s is None
    seen = {}
    monkeypatch.setattr(generate_module, "run_generate", lambda **kwargs: seen.update(kwargs) or 0)
    for args, expected in ((["--timeout", "0"], None), ([], 1800.0)):
        result = CliRunner().invoke(app, ["generate", "--out", "/tmp/unused", *args])
        assert result.exit_code == 0, result.output
        assert seen["limits"].timeout_s == expected


class _BrokenEngine(ScriptedEngine):
    async def generate(self, prompt_ids, sampling=None):
        raise EngineError("server said 500 three times")


class _OutOfVocab(ScriptedEngine):
    async def generate(self, prompt_ids, sampling=None):
        gen = await super().generate(prompt_ids, sampling)
        return gen.model_copy(update={"completion_ids": [10**7] * len(gen.completion_ids)})


class _EnvThatBreaks:
    """A real Calculator whose step raises: an environment bug."""

    def __init__(self, exc):
        self.env, self.exc, self.closed = calc(), exc, False

    async def areset(self, **kw):
        return await self.env.areset(**kw)

    async def astep(self, action):
        raise self.exc

    async def aclose(self):
        self.closed = True
        await self.env.aclose()


@pytest.mark.parametrize(
    "case,category",
    [("engine", "engine"), ("tokenization", "tokenization"), ("environment", "environment"), ("sandbox", "sandbox")],
)
async def test_error_categories_are_data_and_env_is_closed(tool_tok, say, case, category):
    from rollgym.envs.sandbox import SandboxDeadError

    env = _EnvThatBreaks(
        KeyError("tool table corrupted") if case == "environment" else SandboxDeadError("container gone")
    )
    engine = {"engine": _BrokenEngine([]), "tokenization": _OutOfVocab([say.call("add", a=1, b=1)])}.get(
        case, ScriptedEngine([say.call("add", a=1, b=1)])
    )
    r = await run_rollout(env, Policy(engine=engine, tokenizer=tool_tok), TASK)
    assert r.stop_reason == "error" and r.error.category == category and r.error.message
    assert env.closed


class _EnvThatReplies(_EnvThatBreaks):
    """A real Calculator whose step answers with what the test says (rewards, reply) after the real step."""

    def __init__(self, reply=None, reward=None, components=None, terminated=False):
        super().__init__(None)
        self.reply, self.reward, self.components, self.terminated = reply, reward, components, terminated

    async def astep(self, action):
        reply, reward, terminated, truncated, info = await self.env.astep(action)
        if self.components is not None:
            info["reward_components"] = self.components
        return (
            reply if self.reply is None else self.reply,
            reward if self.reward is None else self.reward,
            terminated or self.terminated,
            truncated,
            info,
        )

    async def compute_reward(self):
        return await self.env.compute_reward()


@pytest.mark.parametrize(
    "reward,components,where",
    [
        (float("nan"), None, "reward is nan"),
        (1.0, {"resolved": float("inf")}, "'resolved' is inf"),
        ("high", None, "'high', not a number"),
    ],
)
async def test_a_non_finite_reward_is_an_environment_error_not_a_poisoned_group(
    tool_tok, say, reward, components, where
):
    from rollgym.rollouts.records import Rollout

    env = _EnvThatReplies(reward=reward, components=components, terminated=True)
    r = await run_rollout(env, Policy(engine=ScriptedEngine([say.call("add", a=1, b=1)]), tokenizer=tool_tok), TASK)
    assert r.stop_reason == "error" and r.error.category == "environment" and r.error.type == "InvalidRewardError"
    assert where in r.error.message and r.reward == 0.0 and len(r.turns) == 1  # the sampled turn is kept
    assert Rollout.model_validate_json(r.model_dump_json()) == r  # and it survives the JSONL round trip


async def test_a_non_finite_final_reward_is_an_environment_error(tool_tok, say):
    env = _EnvThatReplies()

    async def nan_reward():
        return float("nan"), {}

    env.compute_reward = nan_reward
    r = await run_rollout(
        env,
        Policy(engine=ScriptedEngine(lambda p, s: say.call("add", a=1, b=1)), tokenizer=tool_tok),
        TASK,
        limits=Limits(max_turns=2),
    )
    assert r.stop_reason == "max_turns" and r.error.category == "environment" and "nan" in r.error.message
    assert r.reward == 0.0 and len(r.turns) == 2


@pytest.mark.parametrize(
    "reply,problem",
    [
        ("3", "must be a list of chat messages, got str"),
        ([{"role": "assistant", "content": "x"}], "message 0"),
        ([{"role": "tool", "content": "3"}], "tool_call_id"),
    ],
)
async def test_an_invalid_reply_is_an_environment_error(tool_tok, say, reply, problem):
    r = await run_rollout(
        _EnvThatReplies(reply=reply),
        Policy(engine=ScriptedEngine([say.call("add", a=1, b=1)]), tokenizer=tool_tok),
        TASK,
    )
    assert r.stop_reason == "error" and r.error.category == "environment" and r.error.type == "InvalidReplyError"
    assert problem in r.error.message and len(r.turns) == 1 and r.turns[0].completion_ids


async def test_cancellation_releases_the_environment(tool_tok, say):
    env = _EnvThatBreaks(None)
    env.astep = lambda action: asyncio.sleep(10)
    task = asyncio.create_task(
        run_rollout(env, Policy(engine=ScriptedEngine([say.call("add", a=1, b=1)]), tokenizer=tool_tok), TASK)
    )
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert env.closed


async def test_real_default_model_short_episode(tool_tok):
    """SmolLM2-135M through TransformersEngine: whatever it writes, the rollout is well-formed data."""
    from rollgym.engines.transformers_engine import TransformersEngine

    engine = TransformersEngine("smollm2-135m")
    try:
        r = await run_rollout(
            calc(),
            Policy(engine=engine, tokenizer=tool_tok),
            TASK,
            sampling=SamplingParams(temperature=0.7, seed=1),
            limits=Limits(max_turns=2, max_tokens_per_turn=48),
        )
    finally:
        await engine.aclose()
    assert r.error is None, r.error
    assert r.stop_reason in ("no_tool_call", "env_terminated", "max_turns", "truncated_completion")
    view = r.token_view()
    assert len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"]) > 0
    assert all(lp <= 0.0 for lp, m in zip(view["logprobs"], view["env_mask"], strict=True) if m)
    assert r.model == "smollm2-135m" and r.engine == "transformers"
