"""Batch generation: groups, resume, crash-safe JSONL, summary, export, Ctrl-C, progress."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from support.interrupt import interruptible

from rollgym.engines import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.generate import generate_to_dir
from rollgym.rollouts.output import RolloutWriter, read_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.summary import RunSummary, pass_at_k, read_summary, summarize

TASKS = CalculatorEnv.default_tasks(4)


def solver(tool_tok, say, wrong_every: int = 0):
    """Solve each task by submitting its answer (read from the prompt), wrong for some samples."""
    answers = {t["question"]: t["answer"] for t in TASKS}
    counter = {"n": 0}

    def policy(prompt, sampling):
        text = tool_tok.hf.decode(prompt)
        question = next(q for q in answers if q in text)
        counter["n"] += 1
        wrong = wrong_every and counter["n"] % wrong_every == 0
        return say.call("submit", answer=answers[question] + (1 if wrong else 0))

    return policy


async def test_groups_concurrency_and_order(tool_tok, say):
    engine = ScriptedEngine(solver(tool_tok, say), delay_s=0.01)
    seen = []
    rollouts = await run_rollouts(
        "rollgym/Calculator-v0",
        TASKS,
        Policy(engine=engine, tokenizer=tool_tok),
        n=3,
        concurrency=5,
        sampling=SamplingParams(seed=7),
        on_result=seen.append,
    )
    assert len(rollouts) == len(seen) == 12
    assert [(r.task_id, r.sample_index) for r in rollouts] == [(t["task_id"], s) for t in TASKS for s in range(3)]
    assert all(r.reward == 1.0 and r.group_id == r.task_id for r in rollouts)
    seeds = {r.sampling["seed"] for r in rollouts}
    assert len(seeds) == 12  # each sample of a group draws differently, reproducibly


async def test_one_failing_rollout_does_not_take_down_the_batch(tool_tok, say):
    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("sandbox quota exceeded")
        return CalculatorEnv()

    rollouts = await run_rollouts(
        factory, TASKS[:2], Policy(engine=ScriptedEngine(solver(tool_tok, say)), tokenizer=tool_tok), n=2, concurrency=1
    )
    assert len(rollouts) == 4
    assert sum(r.error is not None for r in rollouts) == 1
    bad = next(r for r in rollouts if r.error)
    assert bad.error.category == "environment" and "quota" in bad.error.message


async def test_generate_writes_resumable_jsonl_and_summary(tool_tok, say, tmp_path):
    out = tmp_path / "run"
    summary = await generate_to_dir(
        env="rollgym/Calculator-v0",
        tasks=TASKS[:2],
        policy=Policy(engine=ScriptedEngine(solver(tool_tok, say, 2)), tokenizer=tool_tok),
        out=out,
        n=2,
        concurrency=2,
    )
    lines = (out / "rollouts.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["schema_version"] == 3 for line in lines)
    assert summary["rollouts"] == 4 and summary["reward_mean"] == 0.5
    assert summary["pass@1"] == 0.5 and summary["errors"] == {}
    assert json.loads((out / "summary.json").read_text())["rollouts"] == 4
    # The summary is typed, and summary.json keeps its keys ("pass@1", per task too) and loads back equal.
    assert isinstance(summary, RunSummary) and summary.pass_at_k == {1: 0.5, 2: 1.0} and summary.tasks == 2
    on_disk = json.loads((out / "summary.json").read_text())
    assert (
        on_disk["pass@2"] == 1.0 and on_disk["per_task"]["calc-0"]["pass@1"] == summary.per_task["calc-0"].pass_at_k[1]
    )
    assert read_summary(out) == summary and summary.to_dict() == on_disk
    # Resume with more tasks: only the missing (task, sample) pairs run.
    engine = ScriptedEngine(solver(tool_tok, say))
    await generate_to_dir(
        env="rollgym/Calculator-v0",
        tasks=TASKS,
        policy=Policy(engine=engine, tokenizer=tool_tok),
        out=out,
        n=2,
        resume=True,
    )
    keys = [r.key for r in read_rollouts(out / "rollouts.jsonl")]
    assert len(keys) == len(set(keys)) == 8 and engine.calls == 4
    with pytest.raises(FileExistsError, match="--resume"):
        await generate_to_dir(
            env="rollgym/Calculator-v0", tasks=TASKS, policy=Policy(engine=engine, tokenizer=tool_tok), out=out, n=2
        )
    # The output loads with datasets, and exports to Parquet with TRL's columns.
    from datasets import load_dataset

    ds = load_dataset("json", data_files=str(out / "rollouts.jsonl"), split="train")
    assert len(ds) == 8 and "turns" in ds.column_names
    from rollgym.integrations.export import export_parquet

    path, count = export_parquet(out)
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    assert count == 8 and {"prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "reward_correct"} <= set(
        table.column_names
    )


def test_torn_last_line_is_repaired(tmp_path, tool_tok):
    from rollgym.rollouts.records import Rollout

    good = Rollout(task_id="a").model_dump_json()
    path = tmp_path / "rollouts.jsonl"
    path.write_text(good + "\n" + good[: len(good) // 2])  # the process died mid-write
    writer = RolloutWriter(tmp_path, resume=True)
    writer.write(Rollout(task_id="b"))
    writer.close()
    assert [r.task_id for r in read_rollouts(path)] == ["a", "b"]


def test_pass_at_k():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == 0.25 and abs(pass_at_k(4, 1, 2) - 0.5) < 1e-12


def _started(cmd: list[str], out, env: dict):
    """Start `rollgym generate` and return once it has written 2 rollouts: (process, rollouts path)."""
    proc = subprocess.Popen(interruptible(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    path = out / "rollouts.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not path.exists() or path.read_text().count("\n") < 2):
        time.sleep(0.2)
    return proc, path


@pytest.mark.slow
def test_ctrl_c_leaves_a_valid_resumable_file(tmp_path):
    """The real CLI with the real default model: SIGINT mid-run, then --resume completes the rest (in 2 worker processes)."""
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "rollgym",
        "generate",
        "--env",
        "rollgym/Calculator-v0",
        "--num-tasks",
        "6",
        "--n",
        "2",
        "--concurrency",
        "2",
        "--max-turns",
        "1",
        "--max-tokens",
        "8",
        "--out",
        str(out),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc, path = _started(cmd, out, env)
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 130, output
    assert "--resume" in output
    first = list(read_rollouts(path))
    assert 2 <= len(first) < 12
    assert path.read_bytes().endswith(b"\n")
    done = subprocess.run(cmd + ["--resume", "--workers", "2"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    keys = [r.key for r in read_rollouts(path)]
    assert len(keys) == len(set(keys)) == 12
    assert all(r.error is None for r in read_rollouts(path)), done.stderr  # the workers' own engines sampled
    assert [r.id for r in read_rollouts(path)][: len(first)] == [r.id for r in first]  # earlier lines untouched


@pytest.mark.slow
def test_sigterm_stops_like_ctrl_c_with_exit_143(tmp_path):
    """SIGTERM (what Kubernetes, SLURM, Ray and `timeout` send) unwinds as Ctrl-C does: a valid file, exit 143."""
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "rollgym",
        "generate",
        "--env",
        "rollgym/Calculator-v0",
        "--num-tasks",
        "6",
        "--n",
        "2",
        "--concurrency",
        "2",
        "--max-turns",
        "1",
        "--max-tokens",
        "8",
        "--out",
        str(out),
    ]
    proc, path = _started(cmd, out, {**os.environ, "HF_HUB_OFFLINE": "1"})
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 143, output
    assert "terminated (SIGTERM)" in output and "--resume" in output
    rollouts = list(read_rollouts(path))
    assert 2 <= len(rollouts) < 12 and path.read_bytes().endswith(b"\n")
    assert len({r.key for r in rollouts}) == len(rollouts)


@pytest.mark.slow
def test_workers_that_cannot_build_the_engine_stop_generate_without_writing_errors(tmp_path):
    """The tokenizer loads in the parent, but no worker can build the model: exit 2, nothing to resume past."""
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "rollgym",
        "generate",
        "--env",
        "rollgym/Calculator-v0",
        "--num-tasks",
        "3",
        "--n",
        "1",
        "--workers",
        "2",
        "--model",
        f"hf:{empty}",
        "--tokenizer",
        "smollm2-135m",
        "--out",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "could not start" in done.stderr and str(empty) in done.stderr
    assert not (out / "rollouts.jsonl").exists() or (out / "rollouts.jsonl").read_text() == ""


def test_writer_keeps_a_rollout_with_a_value_json_cannot_hold(tmp_path):
    """An environment's own object in a record is written as text, not a crashed writer or a lost line."""
    from rollgym.rollouts.records import Rollout, ToolCall, Turn

    rollout = Rollout(
        task_id="t",
        turns=[Turn(index=0, prompt_len=3, tool_calls=[ToolCall(id="c", name="f", arguments={"when": object()})])],
    )
    writer = RolloutWriter(tmp_path)
    writer.write(rollout)
    writer.close()
    (back,) = read_rollouts(writer.path)
    assert back.key == ("t", 0) and back.turns[0].tool_calls[0].arguments["when"].startswith("<object object at")


class _OwnIdEnv(CalculatorEnv):
    """Reports an id of its own for each task: the row's id (what resume matches) must still win."""

    async def setup(self, task):
        messages, meta = await super().setup(task)
        return messages, {**meta, "task_id": "own-" + meta["task_id"]}


async def test_the_rows_id_is_what_resume_and_groups_use(tool_tok, say, tmp_path):
    rows = [{"question": "What is 2?", "answer": 2, "task_id": "row-a"}]
    policy = Policy(engine=ScriptedEngine(lambda p, s: say.call("submit", answer=2)), tokenizer=tool_tok)
    for _ in range(2):
        await generate_to_dir(env=_OwnIdEnv, tasks=rows, policy=policy, out=tmp_path, n=1, resume=True)
    [rollout] = list(read_rollouts(tmp_path / "rollouts.jsonl"))
    assert (rollout.task_id, rollout.group_id, rollout.env_task_id) == ("row-a", "row-a", "own-row-a")


def test_rows_come_from_any_iterable_and_an_empty_batch_sums_to_nothing():
    """One `load_tasks` for every source; an empty summary is `{"rollouts": 0}` on disk, as before."""
    import rollgym as rg

    rows = rg.load_tasks("rollgym/Calculator-v0", iter(TASKS), num_tasks=3)
    assert rows == TASKS[:3] and rg.load_tasks("rollgym/Calculator-v0", num_tasks=2) == CalculatorEnv.default_tasks(2)
    assert summarize([]).to_dict() == {"rollouts": 0} and summarize([]).rollouts == 0
    import rollgym.envs.swe as swe

    assert not hasattr(swe, "load_tasks") and callable(swe.parse_tasks)  # one load_tasks: rollgym's
