"""The Env contract on the no-Docker built-in (Calculator) and the example env: reset/step/close,
spaces, registration, and the async twins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import rollgym.envs
from rollgym.envs import ChatMessageSpace, ChatMessagesSpace, UnknownEnvironmentError, make
from rollgym.envs.builtin.calculator import CalculatorEnv

ROOT = Path(__file__).resolve().parents[3]


def call(name: str, args, call_id: str = "c1") -> dict:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def assistant(*calls, content=None) -> dict:
    return {"role": "assistant", "content": content, **({"tool_calls": list(calls)} if calls else {})}


def test_gymnasium_make_returns_a_registered_rollgym_env():
    env = gymnasium.make("rollgym/Calculator-v0")
    assert isinstance(env.unwrapped, CalculatorEnv) and isinstance(env.unwrapped, gymnasium.Env)
    assert "rollgym/SWE-v0" in gymnasium.registry
    env.close()


def test_unknown_id_suggests_the_closest_name():
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'rollgym/Calculator-v0'"):
        make("rollgym/Calculater-v0")
    with pytest.raises(gymnasium.error.NameNotFound):
        make("rollgym/calculator")


def test_reset_info_contract_and_observation_space():
    env = make("rollgym/Calculator-v0")
    obs, info = env.reset(seed=7)
    assert env.observation_space.contains(obs)
    assert info["task_id"].startswith("calc-") and "answer" not in info
    names = [t["function"]["name"] for t in info["tools"]]
    assert sorted(names) == ["add", "multiply", "submit", "subtract"]
    for schema in info["tools"]:
        assert schema["type"] == "function" and schema["function"]["parameters"]["type"] == "object"
    sub = next(t for t in info["tools"] if t["function"]["name"] == "subtract")["function"]
    assert sub["description"] == "Subtract b from a."
    assert sub["parameters"]["properties"]["a"] == {"description": "the minuend", "type": "integer"}
    assert sub["parameters"]["required"] == ["a", "b"]
    assert sub["parameters"]["additionalProperties"] is False
    env.close()


def test_same_seed_same_task_and_reward_is_deterministic():
    env = make("rollgym/Calculator-v0")
    _, info1 = env.reset(seed=3)
    _, info2 = env.reset(seed=3)
    assert info1["question"] == info2["question"] and info1["task_id"] == info2["task_id"]
    env.close()
    code = (
        "import rollgym.envs; e = rollgym.envs.make('rollgym/Calculator-v0'); "
        "print(e.reset(seed=3)[1]['task_id'], e.unwrapped.task['answer'])"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(s)},
        ).stdout
        for s in (1, 2)
    }
    assert len(outs) == 1 and outs.pop().split()[0] == info1["task_id"]


def test_an_episode_with_correct_and_wrong_answers():
    task = {"task_id": "t1", "question": "What is (2 + 3) * 4?", "answer": 20}
    env = make("rollgym/Calculator-v0")
    obs, info = env.reset(options={"task": task})
    assert info["task_id"] == "t1" and obs[-1]["content"] == task["question"]
    obs, reward, term, trunc, info = env.step(
        assistant(call("add", {"a": 2, "b": 3}, "a1"), call("multiply", {"a": 5, "b": 4}, "m1"))
    )
    assert [m["content"] for m in obs] == ["5", "20"] and [m["tool_call_id"] for m in obs] == ["a1", "m1"]
    assert all(m["role"] == "tool" and m["name"] for m in obs)
    assert (reward, term, trunc) == (0.0, False, False) and info["reward_components"] == {}
    rec = info["tool_calls"][0]
    assert (
        set(rec.model_dump()) >= {"id", "name", "arguments", "result", "failed", "duration_s"} and rec.failed is False
    )
    obs, reward, term, trunc, info = env.step(assistant(call("submit", {"answer": 20})))
    assert term and not trunc and reward == 1.0
    assert info["reward_components"] == {"correct": 1.0, "submitted": 1.0}
    with pytest.raises(RuntimeError, match="reset"):
        env.step(assistant(call("add", {"a": 1, "b": 1})))
    env.reset(options={"task": task})
    *_, reward, term, _, info = env.step(assistant(content="I think it is 21"))
    assert term and reward == 0.0 and info["finish_reason"] == "text_reply"
    env.close()
    env.close()  # idempotent


@pytest.mark.parametrize(
    ("bad_call", "kind", "needle"),
    [
        (call("divide", {"a": 1, "b": 2}), "unknown_tool", "unknown tool 'divide'"),
        (call("add", '{"a": 1,'), "bad_json", "not valid JSON"),
        (call("add", "[1, 2]"), "bad_json", "must be a JSON object"),
        (call("add", {"a": "one", "b": 2}), "bad_arguments", "a: Input should be a valid integer"),
        (call("add", {"a": 1}), "bad_arguments", "b: Field required"),
        (call("add", {"a": 1, "b": 2, "c": 3}), "bad_arguments", "c: Extra inputs are not permitted"),
        (call("add", {"a": [1], "b": 2}), "bad_arguments", "a: Input should be a valid integer"),
    ],
)
def test_each_bad_tool_call_gets_an_explanatory_tool_message(bad_call, kind, needle):
    env = make("rollgym/Calculator-v0")
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step(assistant(bad_call))
    assert obs[0]["role"] == "tool" and obs[0]["tool_call_id"] == "c1"
    assert obs[0]["content"].startswith("Error:") and needle in obs[0]["content"]
    assert info["tool_calls"][0].failed and info["tool_calls"][0].error_kind == kind
    assert not term and not trunc
    env.close()


def test_malformed_assistant_message_is_rejected_with_reason():
    env = make("rollgym/Calculator-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="role must be one of"):
        env.step({"role": "user", "content": "hi"})
    with pytest.raises(ValueError, match="function.name"):
        env.step({"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]})
    env.close()


def test_max_turns_truncates_and_still_reports_reward():
    env = make("rollgym/Calculator-v0", max_turns=2)
    env.reset(seed=0)
    env.step(assistant(call("add", {"a": 1, "b": 1})))
    _, reward, term, trunc, info = env.step(assistant(call("add", {"a": 1, "b": 1})))
    assert trunc and not term and info["finish_reason"] == "max_turns"
    assert info["reward_components"] == {"correct": 0.0, "submitted": 0.0}
    env.close()


def test_spaces_sample_valid_messages_and_reject_invalid_ones():
    env = make("rollgym/Calculator-v0")
    env.action_space.seed(0)
    env.observation_space.seed(0)
    for _ in range(50):
        action = env.action_space.sample()
        assert env.action_space.contains(action) and action["role"] == "assistant"
        assert env.observation_space.contains(env.observation_space.sample())
    assert any("tool_calls" in env.action_space.sample() for _ in range(20))
    space = ChatMessagesSpace()
    assert not space.contains({"role": "user", "content": "x"})
    assert not space.contains([{"role": "robot", "content": "x"}])
    assert not space.contains([{"role": "tool", "content": "x"}])  # no tool_call_id
    assert not ChatMessageSpace(("assistant",)).contains({"role": "assistant", "content": 3})
    assert isinstance(env.action_space, gymnasium.spaces.Space)
    env.close()


async def test_async_twins_run_concurrent_episodes():
    import asyncio

    envs = [CalculatorEnv() for _ in range(8)]
    resets = await asyncio.gather(*(e.areset(seed=i) for i, e in enumerate(envs)))
    answers = [e.task["answer"] for e in envs]
    steps = await asyncio.gather(
        *(e.astep(assistant(call("submit", {"answer": a}))) for e, a in zip(envs, answers, strict=True))
    )
    assert [s[1] for s in steps] == [1.0] * 8 and all(s[2] for s in steps)
    assert len({r[1]["task_id"] for r in resets}) >= 1
    with pytest.raises(RuntimeError, match="await"):
        envs[0].reset(seed=0)
    for e in envs:
        await e.aclose()
        e.close()


def test_envs_imports_nothing_else_of_rollgym():
    code = (
        "import sys, rollgym.envs, rollgym.envs.swe, rollgym.envs.sandbox; "
        "bad = [m for m in sys.modules if m.startswith(('rollgym.tokenization', 'rollgym.rollouts'))]; "
        "ours = {m for m in sys.modules if m.startswith('rollgym.') and not m.startswith('rollgym.envs')}; "
        "assert ours <= {'rollgym.errors', 'rollgym.limits', 'rollgym.models', 'rollgym.version'}, ours; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert rollgym.envs.__name__ == "rollgym.envs"


def test_a_malformed_task_is_a_clear_error():
    env = make("rollgym/Calculator-v0")
    with pytest.raises(ValueError, match="missing \\['answer'\\]"):
        env.reset(options={"task": {"task_id": "x", "question": "?"}})
    env.close()


class _Echo(rollgym.envs.Env):
    """Reads `task["word"]` as a new user would: it has tasks of its own."""

    @classmethod
    def default_tasks(cls, n, seed=0):
        return [{"task_id": f"echo-{seed}-{i}", "word": f"w{seed + i}"} for i in range(n)]

    async def setup(self, task):
        self.word = task["word"]
        return [{"role": "user", "content": self.word}], {"task_id": task["task_id"]}

    async def compute_reward(self):
        return 0.0, {}


class _NoTasks(_Echo):
    default_tasks = rollgym.envs.Env.default_tasks  # none of its own

    async def setup(self, task):
        self.got = task
        return [{"role": "user", "content": "hi"}], {"task_id": "x"}


def test_a_reset_that_names_no_task_takes_one_of_the_envs_default_tasks():
    """Issue 26: setup gets a task whenever one can be had: default_tasks(1, seed), the seed drawn from the
    episode's generator when reset gets none; an environment without tasks of its own still gets None."""
    rollgym.envs.check_env(_Echo())  # reads task["word"]: a TypeError on None before
    env = _Echo()
    messages, info = env.reset(seed=3)
    assert messages[0]["content"] == "w3" and info["task_id"] == "echo-3-0" and env.task["word"] == "w3"
    assert env.reset(seed=3)[1]["task_id"] == "echo-3-0"  # reproducible by seed
    assert env.reset(options={"task": {"task_id": "mine", "word": "given"}})[0][0]["content"] == "given"
    unseeded = {env.reset()[1]["task_id"] for _ in range(8)}
    assert len(unseeded) > 1  # no seed: drawn from the episode's generator
    bare = _NoTasks()
    bare.reset(seed=0)
    assert bare.got is None
    env.close()
    bare.close()


def test_the_calculators_default_tasks_say_their_seed_in_their_ids():
    assert [t["task_id"] for t in CalculatorEnv.default_tasks(2)] == ["calc-0", "calc-1"]
    assert [t["task_id"] for t in CalculatorEnv.default_tasks(2, seed=5)] == ["calc-5-0", "calc-5-1"]
    env = make("rollgym/Calculator-v0")
    assert env.reset(seed=5)[1]["task_id"] == "calc-5-0"
    env.close()
