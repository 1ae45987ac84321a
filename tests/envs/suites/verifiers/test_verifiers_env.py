"""verifiers v1 tasksets in rollgym's loop (`verifiers/env-v0`): a scripted policy solves the calculator taskset and
the number-guessing game, and each reward is the task's own `@vf.reward`s as verifiers scores them (1 where solved);
the game's `@vf.stop` ends the episode; a reward that raises is that rollout's recorded error and the batch goes on;
`rg.check_env` passes; a taskset is also loaded by its module id; a task that needs verifiers' sandbox is refused."""

from __future__ import annotations

import re

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.core import InvalidTaskError
from rollgym.errors import UsageError

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed: pip install 'rollgym[verifiers]'")


from vf_tasksets import (  # noqa: E402  # isort: skip  # imported after the skip above: it needs verifiers
    ArithmeticTaskset,
    GuessTaskset,
    QuestionTaskset,
    SometimesBrokenTaskset,
    taskset,
)

ENV_ID = "verifiers/env-v0"


def user_text(prompt: str) -> str:
    return prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]


def tool_results(prompt: str) -> list[str]:
    return [r.strip() for r in re.findall(r"<tool_response>(.*?)</tool_response>", prompt, re.S)]


async def test_the_calculator_taskset_is_solved_with_the_tool_and_scored_by_its_own_reward(tool_tok, say):
    """Call `calculator_calculate` (verifiers' `<server>_<tool>` name) on the question, then answer the tool's result
    in `\\boxed{}`; a wrong answer on the last task scores 0 by the same reward."""
    ts = taskset(ArithmeticTaskset)

    def reply(prompt_ids, sampling):
        prompt = tool_tok.decode(prompt_ids)
        a, b = re.search(r"What is (\d+) \* (\d+)", user_text(prompt)).groups()
        results = tool_results(prompt)
        if not results:
            return say.call("calculator_calculate", expression=f"{a} * {b}")
        answer = results[-1] if a != "9" else "80"  # the last task is answered wrong on purpose
        return say.text(f"The product is \\boxed{{{answer}}}.")

    tasks = rg.make(ENV_ID, environment=ts).unwrapped.default_tasks(3)
    policy = rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)
    rollouts = await rg.run_rollouts(
        ENV_ID, tasks, policy, env_kwargs={"environment": ts}, limits=rg.Limits(max_turns=4)
    )
    assert [r.error for r in rollouts] == [None] * 3
    assert [r.reward for r in rollouts] == [1.0, 1.0, 0.0]
    assert [r.reward_components["correct"] for r in rollouts] == [1.0, 1.0, 0.0]
    assert all(r.reward_components["metric/tool_calls"] == 1.0 for r in rollouts)
    for rollout, task in zip(rollouts, ts, strict=True):
        assert rollout.task_id == task.key
        assert rollout.messages()[0] == {"role": "system", "content": "You are a careful assistant."}
        assert rollout.turns[0].tool_calls[0].name == "calculator_calculate" and len(rollout.turns) == 2
        assert rollout.token_exact
    first = rollouts[0].turns[0].tool_calls[0]
    assert first.result == "425" and not first.failed


async def test_the_game_is_played_through_its_tool_and_ends_on_its_stop_condition(tool_tok, say):
    """Binary search with the `guess` tool; the task's `@vf.stop solved` ends the episode at the right guess, and the
    reward is `won` + 0.1 * `few_guesses`, as verifiers sums its weighted rewards."""

    def reply(prompt_ids, sampling):
        low, high = 1, 100
        prompt = tool_tok.decode(prompt_ids)
        guesses = [int(n) for n in re.findall(r'"number": (\d+)', prompt)]
        for guess, answer in zip(guesses, tool_results(prompt), strict=True):
            low, high = (guess + 1, high) if answer == "higher" else (low, guess - 1)
        return say.call("guess", number=(low + high) // 2)

    ts = taskset(GuessTaskset)
    policy = rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)
    rollouts = await rg.run_rollouts(
        ENV_ID, [{"index": 0}, {"index": 1}], policy, env_kwargs={"environment": ts}, limits=rg.Limits(max_turns=10)
    )
    for rollout, secret in zip(rollouts, (42, 7), strict=True):
        assert rollout.error is None
        calls = [t.tool_calls[0] for t in rollout.turns]
        assert calls[-1].arguments == {"number": secret} and calls[-1].result == "correct"
        assert [c.result for c in calls[:-1]] and all(c.result in ("higher", "lower") for c in calls[:-1])
        assert rollout.reward_components == {"won": 1.0, "few_guesses": pytest.approx(0.1 / len(calls))}
        assert rollout.reward == pytest.approx(1.0 + 0.1 / len(calls))


async def test_a_reward_that_raises_is_that_rollouts_error_and_the_batch_goes_on(tool_tok, say):
    ts = taskset(SometimesBrokenTaskset)

    def reply(prompt_ids, sampling):
        return say.text(user_text(tool_tok.decode(prompt_ids)).split()[-1].rstrip("."))

    policy = rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)
    tasks = rg.make(ENV_ID, environment=ts).unwrapped.default_tasks(3)
    failed, *scored = await rg.run_rollouts(ENV_ID, tasks, policy, env_kwargs={"environment": ts})
    assert failed.error is not None and failed.error.category == "environment" and failed.error.phase == "reward"
    assert failed.error.type == "ScorerError" and "the rubric's judge is unreachable" in failed.error.message
    assert not rg.is_infra_failure(failed)
    assert [r.reward for r in scored] == [1.0, 1.0] and all(r.error is None for r in scored)


def test_check_env_passes_for_each_taskset():
    for cls in (ArithmeticTaskset, GuessTaskset, QuestionTaskset):
        rg.check_env(rg.make(ENV_ID, environment=taskset(cls)))


def test_the_episode_is_recorded_in_verifiers_own_trace():
    """Each turn is committed to verifiers' message graph; the trace's reward is the one rollgym reports."""
    env = rg.make(ENV_ID, environment=taskset(QuestionTaskset)).unwrapped
    env.reset(options={"task": {"index": 0}})
    _, reward, terminated, _, info = env.step({"role": "assistant", "content": "Paris"})
    assert terminated and reward == 1.0 == env.trace.reward and info["reward_components"] == {"exact": 1.0}
    assert [m.role for m in env.trace.messages] == ["user", "assistant"] and env.trace.last_reply == "Paris"
    assert env.trace.num_turns == 1 and env.trace.is_completed
    env.close()


def test_a_taskset_module_id_is_loaded_by_verifiers_own_loader():
    env = rg.make(ENV_ID, environment="vf_guess").unwrapped
    messages, info = env.reset(options={"task": {"index": 0}})
    assert type(env.taskset).__name__ == "GuessTaskset" and [t["function"]["name"] for t in info["tools"]] == ["guess"]
    assert messages == [{"role": "user", "content": "Find my secret number (1-100) with the guess tool."}]
    env.close()


def test_bad_input_is_a_clear_error():
    with pytest.raises(UsageError, match="pass environment=<a vf.Taskset"):
        rg.make(ENV_ID)

    class SandboxTask(vf.Task[vf.TaskData, vf.State]):
        async def setup(self, trace, runtime) -> None:
            await runtime.run(["true"], {})

    class SandboxTaskset(vf.Taskset[SandboxTask]):
        def load(self):
            yield SandboxTask(vf.TaskData(prompt="hi"), self.config.task)

    env = rg.make(ENV_ID, environment=SandboxTaskset(vf.TasksetConfig(id="sandbox"))).unwrapped
    with pytest.raises(InvalidTaskError, match="needs verifiers' runtime sandbox \\(setup\\)"):
        env.reset(options={"task": {"index": 0}})
    with pytest.raises(InvalidTaskError, match="has no task"):
        env.reset(options={"task": {"index": 5}})
