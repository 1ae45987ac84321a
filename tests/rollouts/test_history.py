"""`history="keep"` vs `"template"` on real templates: what each sends the engine, records and costs."""

from __future__ import annotations

import pytest

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs import make
from rollgym.errors import UsageError
from rollgym.rollouts.history import history_costs
from rollgym.rollouts.loop import run_rollout
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import Rollout

TASK = {"task_id": "calc-1", "question": "What is (2 + 3) * 4?", "answer": 20}


def _odd_call(tok, name: str, **args) -> list[int]:
    """A call as a model may write it, not as the template re-renders it (compact JSON, no newlines)."""
    import json

    body = json.dumps({"name": name, "arguments": args}, separators=(",", ":"))
    return tok.encode(f"<tool_call>{body}</tool_call>") + [tok.end_of_turn_id]


async def _run(tool_tok, script, history: str) -> tuple[Rollout, list[list[int]]]:
    seen: list[list[int]] = []
    queue = list(script)

    def engine_policy(prompt, sampling):
        seen.append(list(prompt))
        return queue.pop(0)

    policy = Policy(engine=ScriptedEngine(engine_policy), tokenizer=tool_tok, history=history)
    rollout = await run_rollout(make("rollgym/Calculator-v0").unwrapped, policy, TASK)
    assert rollout.error is None, rollout.error
    return rollout, seen


async def test_keep_extends_each_prompt_exactly(tool_tok, say):
    script = [
        _odd_call(tool_tok, "add", a=2, b=3),
        _odd_call(tool_tok, "multiply", a=5, b=4),
        say.call("submit", answer=20),
    ]
    r, seen = await _run(tool_tok, script, "keep")
    assert r.history == "keep" and len(r.samples()) == 1
    for before, after, turn in zip(seen, seen[1:], r.turns, strict=False):
        assert after[: len(before) + len(turn.completion_ids)] == before + turn.completion_ids  # sampled ids kept
    # The template would re-render the compact calls: two rewrites, three samples, counted without running it
    # (afterwards: a keep rollout does not pay a full render per turn in the loop).
    assert r.history_cost == {}
    cost = history_costs(r, tool_tok)
    assert cost["keep"].samples == 1
    assert cost["keep"].tokens == len(r.prompt_ids) + len(r.token_view()["completion_ids"])
    assert cost["template"].samples == 3
    assert cost["template"].tokens > cost["keep"].tokens


async def test_template_sends_what_the_template_renders_and_splits_samples(tool_tok, say):
    script = [
        _odd_call(tool_tok, "add", a=2, b=3),
        _odd_call(tool_tok, "multiply", a=5, b=4),
        say.call("submit", answer=20),
    ]
    r, seen = await _run(tool_tok, script, "template")
    assert r.history == "template" and r.reward == 1.0
    history = list(r.initial_messages)
    for k, turn in enumerate(r.turns):
        assert seen[k] == tool_tok.prompt_ids(history, r.tools)  # every prompt is the template's full render
        history += [turn.message, *turn.env_messages]
    samples = r.samples()
    assert len(samples) == 3 and [t.resample is not None for t in r.turns] == [False, True, True]
    for k, sample in enumerate(samples):  # each sample is exactly what the engine saw and sampled
        assert sample["prompt_ids"] == seen[k]
        assert sample["completion_ids"] == r.turns[k].completion_ids
        assert sample["env_mask"] == [1] * len(r.turns[k].completion_ids)
    # Samples share their prefix (system prompt, task): stored once, not copied.
    assert r.turns[1].resample.shared > len(r.prompt_ids) // 2
    assert len(r.turns[1].resample.ids) < len(samples[1]["prompt_ids"])
    assert r.token_view() == samples[-1]
    assert r.history_cost["template"].samples == 3 and r.history_cost["keep"].samples == 1
    assert Rollout.model_validate_json(r.to_json()).samples() == samples


async def test_template_without_rewrites_is_one_sample_like_keep(tool_tok, say):
    script = [say.call("add", a=2, b=3), say.call("multiply", a=5, b=4), say.call("submit", answer=20)]
    kept, _ = await _run(tool_tok, script, "keep")
    templated, _ = await _run(tool_tok, list(script), "template")
    assert len(templated.samples()) == 1 and templated.token_view() == kept.token_view()
    assert history_costs(kept, tool_tok)["template"].samples == 1 == templated.history_cost["template"].samples


def test_history_choice_is_checked():
    with pytest.raises(UsageError, match="history must be 'keep'"):
        Policy(engine=ScriptedEngine([]), tokenizer=None, history="rerender")


def test_old_records_load_as_keep():
    old = {
        "schema_version": 1,
        "task_id": "t",
        "prompt_ids": [1, 2],
        "turns": [{"index": 0, "prompt_len": 2, "completion_ids": [3]}],
    }
    r = Rollout.model_validate(old)
    assert r.history == "keep" and r.history_cost == {} and r.samples() == [r.token_view()]


async def test_generate_records_the_choice_and_export_writes_a_row_per_sample(tool_tok, say, tmp_path):
    from rollgym.integrations.export import export_rows
    from rollgym.rollouts.generate import generate_to_dir
    from rollgym.rollouts.output import read_rollouts

    def solve(prompt, sampling):
        turns = tool_tok.decode(prompt).count("<tool_response>")
        return [
            _odd_call(tool_tok, "add", a=2, b=3),
            _odd_call(tool_tok, "multiply", a=5, b=4),
            say.call("submit", answer=20),
        ][turns]

    policy = Policy(engine=ScriptedEngine(solve), tokenizer=tool_tok, history="template")
    await generate_to_dir(env="rollgym/Calculator-v0", tasks=[TASK], policy=policy, out=tmp_path, n=2)
    rollouts = list(read_rollouts(tmp_path / "rollouts.jsonl"))
    assert [r.history for r in rollouts] == ["template", "template"]
    assert all(r.history_cost["template"].samples == 3 for r in rollouts)
    rows = export_rows(tmp_path / "rollouts.jsonl")
    assert len(rows) == 6 and [row["sample"] for row in rows[:3]] == [0, 1, 2]
    assert rows[1]["prompt_ids"] == rollouts[0].samples()[1]["prompt_ids"] and rows[0]["samples"] == 3


def test_history_cost_reports_both_choices_for_a_run(tool_tok, say, tmp_path):
    import asyncio
    import json

    from typer.testing import CliRunner

    from rollgym.cli import app
    from rollgym.rollouts.generate import generate_to_dir

    script = [_odd_call(tool_tok, "add", a=2, b=3), say.call("submit", answer=20)]
    policy = Policy(
        engine=ScriptedEngine(lambda p, s: script[tool_tok.decode(p).count("<tool_response>")]), tokenizer=tool_tok
    )
    asyncio.run(generate_to_dir(env="rollgym/Calculator-v0", tasks=[TASK], policy=policy, out=tmp_path, n=2))
    from rollgym.tokenization.templates import CHATML_TOOLS

    template = tmp_path / "chatml_tools.jinja"
    template.write_text(CHATML_TOOLS)
    result = CliRunner().invoke(
        app, ["history-cost", str(tmp_path), "--model", "smollm2-135m", "--chat-template", str(template)]
    )
    assert result.exit_code == 0, result.output
    assert (
        "keep           2 samples (1.00 per rollout)" in result.output
        and "template       4 samples (2.00" in result.output
    )
    rows = [json.loads(line) for line in (tmp_path / "history_costs.jsonl").read_text().splitlines()]
    assert [(row["keep"]["samples"], row["template"]["samples"]) for row in rows] == [(1, 2), (1, 2)]
