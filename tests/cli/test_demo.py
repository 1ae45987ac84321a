"""`rollgym demo`: the prompt shows the model's own tool-call format, the run's claims are checked rollout
by rollout (and the checks can fail), and the real job ends with a viewer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rollgym.cli.demo import demo_env_kwargs, prove, run_lines, tool_call_example
from rollgym.rollouts.output import read_rollouts


def test_the_example_is_what_the_parser_reads_back(tool_tok):
    args = {"command": 'grep -rn "def " /testbed | head -20'}
    example = tool_call_example(tool_tok, "bash", args)
    assert example.startswith("<tool_call>") and example.endswith("</tool_call>")
    parsed = tool_tok.parse_completion(tool_tok.encode(example) + [tool_tok.end_of_turn_id])
    assert not parsed.errors and [
        (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed.message["tool_calls"]
    ] == [("bash", args)]
    kwargs = demo_env_kwargs(tool_tok)
    assert "<tool_call>" in kwargs["system_prompt"] and "<tool_call>" in kwargs["nudge"]


def test_proof_replays_each_rollout_and_catches_corruption(scripted_run_dir, tool_tok):
    rollouts = list(read_rollouts(scripted_run_dir / "rollouts.jsonl"))
    good = prove(rollouts, tool_tok)
    assert good["token_exact"] == good["masks_aligned"] == good["rollouts"] == 4
    assert good["with_tool_call"] == 4 and good["multi_turn"] == 4 and good["tool_calls"] == 8
    assert good["retokenized_differs"] == 0  # canonical scripted ids: re-tokenizing happens to agree here
    assert good["rewarded"] == 4  # each scripted rollout submits the right answer
    env_line, tools_line, prompt_line = run_lines(rollouts, "the environment's own")
    assert env_line.startswith("environment    rollgym/Calculator-v0: 2 tasks x 2 samples")
    assert tools_line == "tools          add, multiply, submit, subtract (the environment's own)"
    assert prompt_line == "system prompt  the environment's own"
    rollouts[0].turns[0].bridge_ids[3] += 1  # an environment id the tool message does not produce
    rollouts[1].prompt_ids[-2] += 1  # a prompt the initial messages do not render to
    rollouts[3].turns[1].prompt_len += 1  # the chain of prompts broken
    bad = prove(rollouts, tool_tok)
    assert bad["token_exact"] == 1, "only the untouched rollout replays to its stored ids"
    assert bad["masks_aligned"] == 3, "a changed id keeps the masks aligned; a broken chain does not"
    assert prove(rollouts, None)["token_exact"] == 3, "without a tokenizer only the prompt chain is checked"


@pytest.fixture(scope="module")
def scripted_run_dir(tool_tok, say, tmp_path_factory):
    """2 Calculator tasks x 2 samples by a scripted engine: add, then submit."""
    import asyncio

    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.builtin.calculator import CalculatorEnv
    from rollgym.limits import Limits
    from rollgym.rollouts.generate import generate_to_dir
    from rollgym.rollouts.policy import Policy

    tasks = CalculatorEnv.default_tasks(2)
    answers = {t["question"]: t["answer"] for t in tasks}

    def policy(prompt, sampling):
        text = tool_tok.hf.decode(prompt)
        question = next(q for q in answers if q in text)
        return (
            say.call("add", a=1, b=2) if "<tool_response>" not in text else say.call("submit", answer=answers[question])
        )

    out = tmp_path_factory.mktemp("demo-proof")
    asyncio.run(
        generate_to_dir(
            env="rollgym/Calculator-v0",
            tasks=tasks,
            policy=Policy(engine=ScriptedEngine(policy), tokenizer=tool_tok),
            out=out,
            n=2,
            limits=Limits(max_turns=4, max_tokens_per_turn=64),
        )
    )
    return out


@pytest.mark.slow
@pytest.mark.docker
def test_demo_runs_proves_and_writes_the_viewer(docker_engine, tmp_path):
    """The real main job, made small: the fast embedded model on one bundled SWE task in Docker, 2 samples; its template
    has no tool calling, so its system prompt also shows one worked call, and the output says so."""
    out = tmp_path / "demo"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rollgym",
            "demo",
            "--model",
            "smollm2-135m",  # the fast model; the demo's own (qwen2.5-coder-0.5b) is checked in tests/engines
            "--out",
            str(out),
            "--num-tasks",
            "1",
            "--n",
            "2",
            "--max-turns",
            "2",
            "--max-tokens-per-turn",
            "24",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rollouts = list(read_rollouts(out / "rollouts.jsonl"))
    assert len(rollouts) == 2 and {r.env_id for r in rollouts} == {"rollgym/SWE-v0"}
    assert "Call exactly one tool per reply" in rollouts[0].initial_messages[0]["content"]
    proof = json.loads((out / "proof.json").read_text())
    assert proof["rollouts"] == 2 and proof["token_exact"] == 2 and proof["masks_aligned"] == 2
    assert proof["sampled_ids"] == sum(len(t.completion_ids) for r in rollouts for t in r.turns)
    assert "What this run shows" in proc.stderr and "token-exact    2/2  " in proc.stderr
    assert "tools          bash, str_replace_editor, submit (the environment's own)" in proc.stderr
    assert "system prompt  SWE's own (envs/swe/env.py) + one worked bash call" in proc.stderr
    assert f"viewer: {out / 'view.html'}" in proc.stderr and (out / "view.html").stat().st_size > 10_000
