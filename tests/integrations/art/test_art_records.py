"""rollgym's ART records in rollgym's own venv (ART's own code reads them in test_art_own_code.py): each turn a
`Choice` whose logprobs carry "token_id:<id>" and the sampling logprob, prompts and tool results as messages, GRPO
groups with failed rollouts as exceptions, the export command, the version gate and the engine's request."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from types import SimpleNamespace

import pytest
from rollouts_for_art import art_rollouts
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import EngineError
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import UsageError
from rollgym.integrations.art import ArtEngine, group_records, trajectory_record
from rollgym.integrations.art.trajectory_record import is_choice
from rollgym.integrations.trainer_versions import require_trainer


@pytest.fixture(scope="module")
def kinds(tool_tok, say):
    return art_rollouts(tool_tok, say)


def test_each_turn_is_a_choice_with_its_exact_ids_and_logprobs(kinds):
    rollout = kinds["right"]
    record = trajectory_record(rollout)
    entries = record["messages_and_choices"]
    choices = [e for e in entries if is_choice(e)]
    assert len(choices) == len(rollout.turns) == 2
    for choice, turn in zip(choices, rollout.turns, strict=True):
        content = choice["logprobs"]["content"]
        assert [int(c["token"].split(":")[1]) for c in content] == turn.completion_ids
        assert [c["logprob"] for c in content] == turn.logprobs
        assert "tool_calls" not in choice["message"]  # ART would render them again after the sampled ids
    messages = [e for e in entries if not is_choice(e)]
    assert messages == rollout.initial_messages + [m for t in rollout.turns for m in t.env_messages]
    assert record["tools"] == rollout.tools and record["reward"] == 1.0
    assert record["metadata"]["rollgym_rollout_id"] == rollout.id


def test_a_rewrite_of_history_is_an_additional_history(kinds):
    record = trajectory_record(kinds["template"])
    (extra,) = record["additional_histories"]
    assert sum(map(is_choice, record["messages_and_choices"])) == 1
    assert sum(map(is_choice, extra["messages_and_choices"])) == 1  # the turn before the rewrite is a message


def test_groups_keep_grpo_groups_and_failed_rollouts_are_exceptions(kinds):
    groups = group_records(list(kinds.values()))
    assert [len(g["trajectories"]) for g in groups] == [2, 1, 1, 0]
    (failure,) = groups[-1]["exceptions"]
    assert kinds["failed"].id in failure["message"] and "answer" in failure["message"]
    assert trajectory_record(kinds["versions"])["initial_policy_version"] == 3


def test_export_command_writes_art_groups(tool_tok, say, tmp_path):
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=0)), tokenizer=tool_tok)
    rg.generate("rollgym/Calculator-v0", policy, out=tmp_path / "run", tasks=CalculatorEnv.default_tasks(2), n=2)
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--format", "art"])
    assert result.exit_code == 0, result.output
    groups = [json.loads(line) for line in (tmp_path / "run" / "art.jsonl").read_text().splitlines()]
    assert [len(g["trajectories"]) for g in groups] == [2, 2] and "wrote 4 rows" in result.output


def test_an_art_outside_the_tested_range_is_refused_naming_the_range():
    assert require_trainer("openpipe-art", installed="0.5.18") == "0.5.18"
    with pytest.raises(UsageError, match=r"openpipe-art 0\.5\.19 is outside the versions .*0\.5\.19"):
        require_trainer("openpipe-art", installed="0.5.19")
    if importlib.util.find_spec("art") is None:  # rollgym's venv: ART lives in its own
        with pytest.raises(UsageError, match="openpipe-art is not installed"):
            require_trainer("openpipe-art")


class Completions:
    def __init__(self, answer):
        self.answer, self.calls = answer, []

    async def create(self, **kwargs):
        self.calls.append(kwargs)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_engine_sends_token_ids_through_arts_client_and_reads_vllms_answer():
    answer = {
        "model": "m@3",
        "choices": [
            {"token_ids": [5, 6, 2], "prompt_token_ids": [1, 2, 3], "logprobs": {"token_logprobs": [-0.1, -0.2, -0.3]},
             "finish_reason": "stop", "stop_reason": None}
        ],
    }  # fmt: skip
    completions = Completions(answer)
    client = SimpleNamespace(base_url="http://127.0.0.1:1/v1/", completions=completions)
    engine = ArtEngine(client, "m@3")
    gen = asyncio.run(engine.generate([1, 2, 3], SamplingParams(max_tokens=8, stop_token_ids=[2])))
    assert gen.completion_ids == [5, 6, 2] and gen.logprobs == [-0.1, -0.2, -0.3] and gen.engine == "art"
    (call,) = completions.calls
    assert call["prompt"] == [1, 2, 3] and call["model"] == "m@3" and call["logprobs"] == 0
    assert call["extra_body"] == {"return_token_ids": True, "stop_token_ids": [2], "skip_special_tokens": False}
    broken = ArtEngine(SimpleNamespace(base_url="http://x/v1", completions=Completions(OSError("gone"))), "m")
    with pytest.raises(EngineError, match="ART's inference client failed the request: OSError: gone"):
        asyncio.run(broken.generate([1, 2, 3]))
