"""`rg.run_agents`: a black-box agent over a batch to disk, as `rg.generate` does for the loop: n runs per task, each
on its own session; rollouts flushed as they finish; resume; the summary; Ctrl-C; failures as data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest
from support.interrupt import interruptible

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.swe.grading import GradingInfraError
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.summary import read_summary

ROWS = [{"task_id": f"q{i}", "question": f"q{i}?", "answer": "42"} for i in range(3)]


def agent(row, base_url, api_key):
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "x", max_retries=0)
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": row["question"]}])
    if row["task_id"] == "q2":
        raise RuntimeError("the agent fell over on q2")
    return out.choices[0].message.content


def reward(row, output, rollout):
    return float(output == row["answer"]), {"answered": float(bool(output))}


def test_a_batch_of_agent_runs_to_disk_resumes_and_keeps_failures_as_data(tmp_path, ptok, scripts):
    policy = Policy(engine=ScriptedEngine(lambda prompt, sampling: scripts.text("42")), tokenizer=ptok)
    out = tmp_path / "run"
    summary = rg.run_agents(agent, ROWS, policy, out=out, n=2, reward=reward, concurrency=2)
    rows = list(read_rollouts(out / "rollouts.jsonl"))
    assert sorted((r.task_id, r.sample_index) for r in rows) == [(f"q{i}", s) for i in range(3) for s in range(2)]
    good = [r for r in rows if r.task_id != "q2"]
    assert all(r.error is None and r.reward == 1.0 and r.token_exact and r.group_id == r.task_id for r in good)
    assert all(r.error.category == "agent" and "fell over" in r.error.message for r in rows if r.task_id == "q2")
    assert isinstance(summary, rg.RunSummary) and summary.rollouts == 6 and summary.errors == {"agent": 2}
    assert summary.per_task["q0"].pass_at_k[1] == 1.0 and read_summary(out) == summary
    again = rg.run_agents(agent, ROWS, policy, out=out, n=2, reward=reward, resume=True)
    assert len(list(read_rollouts(out / "rollouts.jsonl"))) == 6 and again.rollouts == 6  # nothing ran twice


def test_a_reward_that_could_not_grade_is_an_infrastructure_failure_run_again_on_resume(tmp_path, ptok, scripts):
    """`rg.swe_reward` raises `GradingInfraError` (a `SandboxError`) when grading could not judge the diff: the
    rollout is a `sandbox` failure, never trained on, and a resumed run grades it again."""
    policy = Policy(engine=ScriptedEngine(lambda prompt, sampling: scripts.text("42")), tokenizer=ptok)
    calls = []

    def flaky_grader(row, output, rollout):
        calls.append(row["task_id"])
        if len(calls) == 1:
            raise GradingInfraError("grading q0 failed (timeout): the container was killed")
        return 1.0

    out = tmp_path / "run"
    first = rg.run_agents(agent, ROWS[:1], policy, out=out, reward=flaky_grader)
    assert first.errors == {"sandbox": 1} and first.infra_failures == 1
    second = rg.run_agents(agent, ROWS[:1], policy, out=out, reward=flaky_grader, resume=True)
    assert second.errors == {} and second.reward_mean == 1.0 and calls == ["q0", "q0"]
    assert (out / "retried.jsonl").read_text().count("\n") == 1  # the failed row is kept, not lost


SLOW_RUN = """
import sys, time, openai
import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

def agent(row, base_url, api_key):
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": row["q"]}])
    time.sleep(0.5)
    return "done"

tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
policy = Policy(engine=ScriptedEngine(lambda p, s: tok.encode("ok") + [tok.end_of_turn_id]), tokenizer=tok)
rows = [{"task_id": f"t{i}", "q": f"q{i}"} for i in range(12)]
rg.run_agents(agent, rows, policy, out=sys.argv[1], concurrency=1, resume=True)
"""


@pytest.mark.slow
def test_ctrl_c_leaves_what_finished_on_disk_and_resume_completes(tmp_path):
    out = tmp_path / "run"
    script = tmp_path / "slow_run.py"
    script.write_text(SLOW_RUN)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        interruptible([sys.executable, str(script), str(out)]), env=env, stderr=subprocess.PIPE, text=True
    )
    path = out / "rollouts.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not path.exists() or path.read_text().count("\n") < 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stderr = proc.communicate(timeout=60)[1]
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr, stderr[-2000:]
    done = [json.loads(line)["task_id"] for line in path.read_text().splitlines()]
    assert 2 <= len(done) < 12  # stopped mid-batch, every finished rollout on disk
    finished = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    ids = [json.loads(line)["task_id"] for line in Path(path).read_text().splitlines()]
    assert sorted(ids) == sorted(f"t{i}" for i in range(12)) and ids[: len(done)] == done
