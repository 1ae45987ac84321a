"""An environment written the wrong shape is told so, naming the signature it needs, before or instead of a raw
Python error: a plain `def` where the loop awaits, `setup` or `compute_reward` returning the wrong shape, a tool
parameter without a type hint, a tool returning None or bytes; and a call given a budget or tasks of the wrong shape
fails before any rollout."""

from __future__ import annotations

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs import EnvCheckError
from rollgym.errors import UsageError


class Answer(rg.Env):
    async def setup(self, task):
        return [{"role": "user", "content": "Say hi."}], {"task_id": "t"}

    async def compute_reward(self):
        return 1.0, {}


def test_a_plain_def_where_the_loop_awaits_is_refused_where_the_class_is_defined():
    with pytest.raises(EnvCheckError, match=r"Sync\.setup must be `async def setup\(self, task\)"):

        class Sync(rg.Env):
            def setup(self, task):  # a plain def: the loop awaits it
                return [], {}

    with pytest.raises(EnvCheckError, match=r"compute_reward must be `async def compute_reward\(self\) -> tuple"):

        class SyncReward(Answer):
            def compute_reward(self):
                return 1.0, {}


def test_setup_returning_only_messages_is_named_by_check_env_and_recorded_on_the_rollout(tool_tok, say):
    class MessagesOnly(Answer):
        async def setup(self, task):
            return [{"role": "user", "content": "Say hi."}]

    with pytest.raises(EnvCheckError, match=r"MessagesOnly\.setup must return \(messages, info\)"):
        rg.check_env(MessagesOnly())
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.text("hi")), tokenizer=tool_tok)
    rollout = asyncio_run(rg.rollout(MessagesOnly(), policy))
    assert rollout.error is not None and rollout.error.type == "EnvCheckError"
    assert "must return (messages, info)" in rollout.error.message


def test_a_bare_float_reward_is_an_environment_error_naming_the_shape(tool_tok, say):
    class BareFloat(Answer):
        async def compute_reward(self):
            return 0.5

    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.text("hi")), tokenizer=tool_tok)
    rollout = asyncio_run(rg.rollout(BareFloat(), policy))
    assert rollout.error is not None and rollout.error.category == "environment"
    assert "compute_reward must return (reward, {component: value})" in rollout.error.message
    assert "got float: 0.5" in rollout.error.message


def test_a_tool_parameter_without_a_type_hint_is_refused_when_the_environment_is_made():
    class Untyped(Answer):
        @rg.tool
        def convert(self, value) -> str:
            """Convert a value."""
            return str(value)

    with pytest.raises(EnvCheckError, match=r"tool 'convert': parameter 'value' has no type hint"):
        Untyped()


def test_a_tool_returning_none_or_bytes_is_a_failed_call_the_model_is_told_about(tool_tok, say):
    class Returns(Answer):
        @rg.tool
        def nothing(self) -> None:
            """Returns nothing."""

        @rg.tool
        def raw(self) -> bytes:
            """Returns bytes."""
            return b"\x00"

        @rg.tool
        def data(self) -> dict:
            """Returns JSON data."""
            return {"ok": True}

    script = iter([say.call("nothing"), say.call("raw"), say.call("data"), say.text("done")])
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: next(script)), tokenizer=tool_tok)
    rollout = asyncio_run(rg.rollout(Returns(), policy, limits=rg.Limits(max_turns=4)))
    calls = [c for t in rollout.turns for c in t.tool_calls]
    assert [(c.name, c.failed) for c in calls] == [("nothing", True), ("raw", True), ("data", False)]
    assert "returned None; the environment's tool must return text or JSON data" in calls[0].result
    assert "returned bytes" in calls[1].result and calls[2].result == '{"ok": true}'


def test_a_budget_or_tasks_of_the_wrong_shape_fail_before_any_rollout(tool_tok, say, tmp_path):
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.text("hi")), tokenizer=tool_tok)
    with pytest.raises(UsageError, match=r"Limits\(max_turns=0\): Input should be greater than or equal to 1"):
        rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "a", num_tasks=1, limits={"max_turns": 0})
    assert not (tmp_path / "a").exists()
    with pytest.raises(UsageError, match="limits must be rg.Limits"):
        asyncio_run(rg.run_rollouts("rollgym/Calculator-v0", [{"task_id": "x"}], policy, limits=3))
    with pytest.raises(UsageError, match=r"tasks is one row \(a dict\): pass a list of rows"):
        asyncio_run(rg.run_rollouts("rollgym/Calculator-v0", {"task_id": "x"}, policy))
    with pytest.raises(UsageError, match="tasks must be rows .* not Answer"):
        rg.load_tasks("rollgym/Calculator-v0", Answer)
    rollout = asyncio_run(rg.rollout(Answer(), policy, limits={"max_turns": 1}))  # a dict of Limits' fields is one
    assert rollout.error is None and rollout.reward == 1.0


def asyncio_run(coro):
    import asyncio

    return asyncio.run(coro)


def test_an_environment_failure_keeps_its_traceback_and_phase_on_the_record_and_in_the_log(tool_tok, say, caplog):
    class Exploding(Answer):
        async def compute_reward(self):
            raise ValueError("reward exploded for value 2")

    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.text("hi")), tokenizer=tool_tok)
    with caplog.at_level("WARNING", logger="rollgym.rollouts"):
        rollout = asyncio_run(rg.rollout(Exploding(), policy))
    error = rollout.error
    assert error is not None and (error.category, error.phase, error.type) == ("environment", "reward", "ValueError")
    assert error.traceback is not None and "in compute_reward" in error.traceback
    assert "reward exploded for value 2" in error.traceback.splitlines()[-1]
    assert any(r.exc_info and "failed in reward" in r.getMessage() for r in caplog.records)
    again = rg.Rollout.model_validate_json(rollout.to_json())  # kept on disk, bounded
    assert again.error == error


def test_a_failed_setup_says_its_phase(tool_tok, say):
    class BrokenSetup(Answer):
        async def setup(self, task):
            raise RuntimeError("no database")

    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.text("hi")), tokenizer=tool_tok)
    error = asyncio_run(rg.rollout(BrokenSetup(), policy)).error
    assert error is not None and error.phase == "setup" and "in setup" in (error.traceback or "")
