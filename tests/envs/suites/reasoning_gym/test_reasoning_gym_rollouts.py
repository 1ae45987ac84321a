"""reasoning-gym environments through rollgym's loop: a scripted policy that answers with the gold answer gets reward 1
and a wrong one less, token-exact; the calculator variant answers with the tool's result; a scorer that raises is the
rollout's recorded error and the batch goes on; `rg.generate` takes the environment's own rows; `rollgym generate` with the real SmolLM2."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from random import Random
from typing import Any

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.core.registration import register_env

#: generators whose gold answer is one string (five have none: boxnet, graph_color, propositional_logic, rubiks_cube,
#: rush_hour score a checked solution instead)
FAMILIES = ["basic_arithmetic", "word_sorting", "caesar_cipher", "knights_knaves", "gcd", "maze"]


def question_of(prompt: str) -> str:
    """The user message of a decoded ChatML prompt."""
    return prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]


def answering_policy(tool_tok, say, answer_of):
    """A policy that replies `<answer>{answer_of(question)}</answer>` to each prompt."""

    def reply(prompt_ids, sampling):
        return say.text(f"<answer>{answer_of(question_of(tool_tok.decode(prompt_ids)))}</answer>")

    return rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)


def assert_token_exact(rollout, script_ids: list[int]) -> None:
    """The sampled ids are exactly the script's, and each turn's prompt is the previous one plus its completion."""
    view = rollout.token_view()
    sampled = [i for i, m in zip(view["completion_ids"], view["env_mask"], strict=True) if m]
    assert sampled == script_ids and rollout.token_exact
    full = view["prompt_ids"] + view["completion_ids"]
    for turn in rollout.turns:
        assert full[turn.prompt_len : turn.prompt_len + len(turn.completion_ids)] == turn.completion_ids
    assert len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"])


@pytest.mark.parametrize("generator", FAMILIES)
async def test_the_gold_answer_scores_1_and_a_wrong_one_less_token_exact(generator, tool_tok, say):
    env_id = f"reasoning_gym/{generator}-v0"
    tasks = rg.make(env_id).unwrapped.default_tasks(4, seed=11)
    import reasoning_gym

    dataset = reasoning_gym.create_dataset(generator, seed=11, size=4)
    gold = {entry["question"]: entry["answer"] for entry in dataset}
    right = await rg.run_rollouts(env_id, tasks, answering_policy(tool_tok, say, gold.__getitem__))
    assert [r.reward for r in right] == [1.0] * 4 and all(r.error is None for r in right)
    assert [r.task_id for r in right] == [t["task_id"] for t in tasks]
    for rollout, entry in zip(right, dataset, strict=True):
        assert rollout.messages()[1]["content"] == entry["question"]
        assert rollout.stop_reason == "no_tool_call" and rollout.reward_components == {"score": 1.0, "answered": 1.0}
        assert_token_exact(rollout, say.text(f"<answer>{entry['answer']}</answer>"))
    wrong = await rg.run_rollouts(env_id, tasks, answering_policy(tool_tok, say, lambda q: "no idea"))
    assert all(r.error is None and r.reward < 1.0 for r in wrong)


async def test_the_calculator_variant_answers_with_the_tools_result(tool_tok, say):
    """The policy sends the question's expression to `calculate`, then answers with what the tool returned."""

    def reply(prompt_ids, sampling):
        prompt = tool_tok.decode(prompt_ids)
        if "<tool_response>" not in prompt:
            expression = question_of(prompt).split(":", 1)[1].rstrip(" =")
            return say.call("calculate", expression=expression)
        result = prompt.rsplit("<tool_response>", 1)[1].split("</tool_response>", 1)[0].strip()
        return say.text(f"The sum is {result}. <answer>{result}</answer>")

    env_id = "reasoning_gym/chain_sum-calculator-v0"
    tasks = rg.make(env_id).unwrapped.default_tasks(5, seed=3)
    policy = rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)
    rollouts = await rg.run_rollouts(env_id, tasks, policy, limits=rg.Limits(max_turns=4))
    assert [r.reward for r in rollouts] == [1.0] * 5
    for rollout in rollouts:
        assert [t.tool_calls[0].name for t in rollout.turns[:1]] == ["calculate"] and len(rollout.turns) == 2
        assert not rollout.turns[0].tool_calls[0].failed
        assert "calculate" in rollout.messages()[0]["content"]
    refused = rg.make(env_id).unwrapped
    await refused.areset(seed=0)
    call = {"id": "c", "type": "function", "function": {"name": "calculate", "arguments": '{"expression": "open(1)"}'}}
    messages, *_ = await refused.astep({"role": "assistant", "content": None, "tool_calls": [call]})
    assert "Call is not arithmetic" in messages[0]["content"]  # the model's code never runs
    await refused.aclose()


@dataclasses.dataclass
class _ScoreOnlyNumbersConfig:
    seed: int | None = None
    size: int = 4


def _raising_dataset_class():
    """A reasoning-gym dataset, registered through reasoning-gym's own API, whose scorer raises on `boom`."""
    from reasoning_gym.dataset import ProceduralDataset

    class ScoreOnlyNumbers(ProceduralDataset):
        def __init__(self, config: _ScoreOnlyNumbersConfig):
            super().__init__(config=config, seed=config.seed, size=config.size)

        def __getitem__(self, idx: int) -> dict[str, Any]:
            value = Random(self.seed + idx).randint(1, 99)
            return {"question": f"Repeat {value}.", "answer": str(value), "metadata": {}}

        def score_answer(self, answer, entry):
            if answer == "boom":
                raise KeyError("the scorer's own bug")
            return super().score_answer(answer, entry)

    return ScoreOnlyNumbers


async def test_a_scorer_that_raises_is_the_rollouts_error_and_the_batch_goes_on(tool_tok, say):
    from reasoning_gym.factory import DATASETS, register_dataset

    if "rollgym_test_raising" not in DATASETS:
        register_dataset("rollgym_test_raising", _raising_dataset_class(), _ScoreOnlyNumbersConfig)
    env_id = "reasoning_gym_test/raising-v0"
    register_env(
        env_id, "rollgym.envs.suites.reasoning_gym.answer_env:make_answer_env", generator="rollgym_test_raising"
    )
    tasks = rg.make(env_id).unwrapped.default_tasks(4)

    def answer(question):
        value = re.search(r"\d+", question).group()
        return "boom" if value == re.search(r"\d+", first_question).group() else value

    import reasoning_gym

    first_question = reasoning_gym.create_dataset("rollgym_test_raising", seed=0, size=4)[0]["question"]
    rollouts = await rg.run_rollouts(env_id, tasks, answering_policy(tool_tok, say, answer))
    failed, *scored = rollouts
    assert failed.error is not None and failed.error.category == "environment" and failed.error.phase == "reward"
    assert failed.error.type == "ScorerError"
    assert 'score_answer (rollgym_test_raising) raised KeyError: "the scorer\'s own bug"' in failed.error.message
    assert not rg.is_infra_failure(failed)  # the task's fault, not the machine's: not retried
    assert [r.reward for r in scored] == [1.0, 1.0, 1.0] and all(r.error is None for r in scored)


def test_generate_runs_the_environments_own_rows(tool_tok, say, tmp_path):
    import reasoning_gym

    gold = {e["question"]: e["answer"] for e in reasoning_gym.create_dataset("products", seed=0, size=3)}
    summary = rg.generate(
        "reasoning_gym/products-v0",
        answering_policy(tool_tok, say, gold.__getitem__),
        out=tmp_path,
        num_tasks=3,
        n=2,
    )
    rollouts = list(rg.read_rollouts(tmp_path / "rollouts.jsonl"))
    assert len(rollouts) == 6 and {r.task_id for r in rollouts} == {"products-0-0", "products-0-1", "products-0-2"}
    assert all(r.reward == 1.0 for r in rollouts) and summary.reward_mean == 1.0


@pytest.mark.slow
def test_rollgym_generate_runs_a_generator_with_the_real_default_model(tmp_path):
    """`rollgym generate --env reasoning_gym/...` with SmolLM2-135M: whatever it writes, the rollouts are well-formed
    and scored by reasoning-gym."""
    out = tmp_path / "run"
    argv = ["--env", "reasoning_gym/basic_arithmetic-v0", "--num-tasks", "2", "--n", "1", "--max-tokens", "16"]
    done = subprocess.run(
        [sys.executable, "-m", "rollgym", "generate", *argv, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rollouts = list(rg.read_rollouts(out / "rollouts.jsonl"))
    assert [r.task_id for r in rollouts] == ["basic_arithmetic-0-0", "basic_arithmetic-0-1"]
    for rollout in rollouts:
        assert rollout.error is None, rollout.error
        assert 0.0 <= rollout.reward <= 1.0 and set(rollout.reward_components) == {"score", "answered"}
        view = rollout.token_view()
        assert len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"]) > 0
        assert rollout.model == "smollm2-135m" and rollout.engine == "transformers" and rollout.token_exact
