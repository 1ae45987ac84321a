"""`rg.AsyncRolloutWorker` as TRL's `AsyncGRPOTrainer` drives it (`start`, the queues, `update_model_version`,
`check_health`, `stop`), with the real Calculator environment and the real tokenizer, and a scripted engine that
samples slowly enough for the trainer's version to move under running rollouts. The real trainer and the real vLLM
server: test_async_trainer_real.py."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.rollouts.output import read_rollouts

TASKS = CalculatorEnv.default_tasks(3)


class CountedCalculator(CalculatorEnv):
    """The Calculator, counting the episodes it opened and released (what a sandbox would hold)."""

    opened = 0
    released = 0

    async def setup(self, task):
        type(self).opened += 1
        self._holding = True
        return await super().setup(task)

    async def teardown(self):
        if getattr(self, "_holding", False):
            type(self).released += 1
            self._holding = False


@pytest.fixture
def counted():
    CountedCalculator.opened = CountedCalculator.released = 0
    return CountedCalculator


def _worker(tool_tok, say, *, env=None, delay_s=0.0, turns=1, first=None, **settings):
    """A worker whose engine answers each task right on even seeds, wrong on odd ones, after `turns - 1` adds."""
    answers = {t["question"]: t["answer"] for t in TASKS}

    def sample(prompt, sampling):  # called as a request ends (after the engine's delay)
        if first is not None:
            first.set()
        text = tool_tok.decode(prompt)
        question = next(q for q in answers if q in text)
        done = text.count("<tool_response>")
        if done < turns - 1:
            return say.call("add", a=done, b=1)
        return say.call("submit", answer=answers[question] + (sampling.seed % 2))

    policy = rg.Policy(engine=ScriptedEngine(sample, delay_s=delay_s, logprob=-0.5), tokenizer=tool_tok)
    settings.setdefault("num_generations", 2)
    settings.setdefault("concurrency", 4)
    return rg.AsyncRolloutWorker(
        env or "rollgym/Calculator-v0",
        policy,
        tasks=TASKS,
        sampling=rg.SamplingParams(seed=3),
        limits=rg.Limits(max_turns=turns + 1),
        **settings,
    )


def _take(worker, n: int, timeout_s: float = 20.0) -> list:
    return [worker.rollout_buffer.get(timeout=timeout_s) for _ in range(n)]


def _fates(out: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in read_rollouts(out / "rollouts.jsonl"):
        fate = r.async_worker.fate
        counts[fate] = counts.get(fate, 0) + 1
    return counts


def _stale_seen(out: Path) -> bool:
    path = out / "rollouts.jsonl"
    return path.exists() and any(r.async_worker.staleness == 1 for r in read_rollouts(path))


def _all_in_flight(worker, n: int) -> bool:
    live = list(worker._producer.live.values()) if worker._producer is not None else []
    return len(live) == n and all(item.holder for item in live)


def _drain(q: queue.Queue) -> list[dict]:
    items = []
    while not q.empty():
        items.append(q.get_nowait())
    return items


def test_groups_are_scored_and_pushed_together_token_exact(tool_tok, say, tmp_path):
    worker = _worker(tool_tok, say, turns=2, out=tmp_path)
    worker.weights.set(1)
    worker.start()
    try:
        samples = _take(worker, 6)
    finally:
        worker.stop()
    by_group: dict[int, list] = {}
    for s in samples[:4]:
        by_group.setdefault(s.group_id, []).append(s)
    assert all(len(g) == 2 for g in by_group.values())  # a group's samples arrive together
    assert [samples[i].group_id == samples[i + 1].group_id for i in (0, 2, 4)] == [True, True, True]
    for group in by_group.values():  # one sample right, one wrong: GRPO's advantages +1 and -1
        assert sorted(s.metrics["reward"] for s in group) == [0.0, 1.0]
        assert sorted(round(s.advantage, 6) for s in group) == [-1.0, 1.0]
    pushed = {r.id: r for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.async_worker.fate == "pushed"}
    rows = {tuple(r.token_view()["prompt_ids"] + r.token_view()["completion_ids"]): r for r in pushed.values()}
    for s in samples:
        rollout = rows[tuple(s.input_ids.tolist())]  # the sample is a recorded rollout, id for id
        mask = s.completion_mask.tolist()
        assert sum(mask) == sum(len(t.completion_ids) for t in rollout.turns) and len(rollout.turns) == 2
        assert {lp for lp, m in zip(s.old_log_probs.tolist(), mask, strict=True) if m} == {-0.5}
        assert s.model_version == 1 and all(t.policy_version == 1 for t in rollout.turns)
    metrics = _drain(worker.metrics_queue)
    assert metrics and {"rollgym/rollouts_per_s", "rollgym/engine_busy_frac", "rollgym/staleness_max"} <= set(
        metrics[-1]
    )
    assert sum(m["rollgym/rollouts_per_s"][0] for m in metrics) >= 6  # every finished rollout counted, once
    assert all(m["rollgym/rollouts_per_s"][1] > 0 for m in metrics)
    worker.check_health(60)


def test_lockstep_produces_one_step_per_version(tool_tok, say):
    """`samples_per_version` (`versions_ahead` 1): synchronous RL with the same worker; nothing more until the
    trainer's version moves."""
    worker = _worker(tool_tok, say, samples_per_version=2)
    worker.start()
    try:
        first = _take(worker, 4)  # a step's worth, and the next step's (the trainer fetches one batch ahead)
        time.sleep(0.5)
        assert worker.rollout_buffer.empty()  # then it waits for the trainer
        worker.update_model_version(1)
        later = _take(worker, 2)
        time.sleep(0.5)
        assert worker.rollout_buffer.empty()
    finally:
        worker.stop()
    assert len({s.group_id for s in first + later}) == 3
    assert all(s.model_version == 1 for s in later)


def test_a_rollout_that_goes_stale_is_aborted_released_written_and_run_again(tool_tok, say, tmp_path, counted):
    first = threading.Event()
    worker = _worker(
        tool_tok, say, env=counted, delay_s=0.25, turns=3, first=first, max_staleness=0, out=tmp_path, concurrency=2
    )
    worker.start()
    try:
        assert first.wait(10)
        time.sleep(0.4)  # every running rollout has a turn sampled by version 0
        worker.weights.pause()
        worker.weights.resume()
        worker.update_model_version(1)  # staleness 1 > 0: each is aborted and started again
        samples = _take(worker, 2)
    finally:
        worker.stop()
    assert all(s.model_version == 1 for s in samples)
    fates = _fates(tmp_path)
    assert fates.get("aborted_stale", 0) >= 1, fates
    aborted = [r for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.async_worker.fate == "aborted_stale"]
    assert all(r.error.category == "internal" and r.error.type == "RolloutStopped" and r.turns for r in aborted)
    assert all(t.policy_version == 0 for r in aborted for t in r.turns)
    assert counted.opened == counted.released > 0  # no environment outlived its rollout
    totals = [m for m in _drain(worker.metrics_queue) if "rollgym/aborted_stale_total" in m]
    assert sum(m["rollgym/aborted_stale_total"] for m in totals) == fates["aborted_stale"]


@pytest.mark.parametrize("stale", ["drop", "keep"])
def test_stale_samples_are_dropped_or_kept_and_counted(tool_tok, say, tmp_path, stale):
    first = threading.Event()
    worker = _worker(
        tool_tok,
        say,
        delay_s=0.3,
        turns=2,
        first=first,
        max_staleness=0,
        restart_stale=False,
        stale=stale,
        out=tmp_path,
    )
    worker.start()
    try:
        assert first.wait(10)  # first turns sampled by version 0, second turns in flight
        worker.update_model_version(1)  # the running groups' samples come out one version stale
        deadline = time.time() + 20
        while time.time() < deadline and not _stale_seen(tmp_path):
            time.sleep(0.05)
    finally:
        worker.stop()
    fates = _fates(tmp_path)
    metrics = _drain(worker.metrics_queue)
    counted_stale = sum(m.get(f"rollgym/{stale}_stale_total", 0) for m in metrics)
    if stale == "drop":
        assert fates.get("dropped_stale", 0) == counted_stale >= 1
    else:
        kept = [r for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.async_worker.staleness == 1]
        assert counted_stale >= 1 and all(r.async_worker.fate == "pushed" for r in kept) and kept


def test_stopping_releases_every_environment_and_writes_the_rollouts_in_flight(tool_tok, say, tmp_path, counted):
    first = threading.Event()
    worker = _worker(tool_tok, say, env=counted, delay_s=0.3, turns=3, first=first, out=tmp_path)
    worker.start()
    assert first.wait(10)
    deadline = time.time() + 20  # every rollout of the two groups under way (a loaded machine starts them late)
    while time.time() < deadline and not _all_in_flight(worker, 4):
        time.sleep(0.05)
    started = time.time()
    worker.stop()  # what TRL's trainer does when training ends or crashes (its `finally`)
    assert time.time() - started < 10
    stopped = [r for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.async_worker.fate == "stopped"]
    assert len(stopped) == 4 and all(r.error.type == "RolloutStopped" for r in stopped)  # 2 groups of 2 in flight
    assert any(r.turns for r in stopped)
    assert counted.opened == counted.released == 4
    worker.check_health(60)  # stopped on purpose: not a failure


def test_a_crash_reaches_the_trainer_as_an_error_naming_the_worker(tool_tok, say):
    def broken(completions, **kwargs):
        raise RuntimeError("the judge is down")

    worker = _worker(tool_tok, say, reward_funcs=[broken])
    worker.start()
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                worker.check_health(60)
            except rg.WorkerError as exc:
                error = exc
                break
            time.sleep(0.05)
        else:
            pytest.fail("the worker's crash never reached check_health")
    finally:
        worker.stop()
    assert (
        isinstance(error, rg.WorkerError) and "AsyncRolloutWorker" in str(error) and "the judge is down" in str(error)
    )


def test_a_failed_weight_sync_fails_the_rollouts_it_interrupted_and_the_run_goes_on(tool_tok, say, tmp_path):
    first = threading.Event()
    worker = _worker(tool_tok, say, delay_s=0.3, turns=2, first=first, out=tmp_path)
    worker.start()
    try:
        assert first.wait(10)  # the first turns are sampled; the second turns' requests are in flight
        time.sleep(0.15)
        worker.weights.pause()
        worker.weights.fail("the server refused the new weights")  # the requests it interrupted cannot be trusted
        samples = _take(worker, 2)  # later rollouts go on with the old weights
    finally:
        worker.stop()
    failed = [r for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.async_worker.fate == "infra_failure"]
    assert failed and all(r.error.category == "engine" and r.error.type == "WeightSyncError" for r in failed)
    assert samples and all(s.model_version == 0 for s in samples)
    assert sum(m.get("rollgym/errors/engine_total", 0) for m in _drain(worker.metrics_queue)) == len(failed)


SIGTERM_SCRIPT = textwrap.dedent(
    """
    import json, sys, rollgym as rg
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
    from rollgym.rollouts.stopping import exit_code
    from rollgym.tokenization.templates import CHATML_TOOLS

    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    call = tok.encode('<tool_call>\\n{"name": "add", "arguments": {"a": 1, "b": 2}}\\n</tool_call>') + [tok.end_of_turn_id]
    engine = ScriptedEngine(lambda p, s: call, delay_s=0.3)
    worker = rg.AsyncRolloutWorker("rollgym/Calculator-v0", rg.Policy(engine=engine, tokenizer=tok), num_generations=2,
                                   limits=rg.Limits(max_turns=50), out=sys.argv[1])
    try:
        worker.start()
        print("started", flush=True)
        while True:  # a trainer waiting for samples
            worker.rollout_buffer.get()
    except KeyboardInterrupt as exc:
        sys.exit(exit_code(exc))
    finally:
        worker.stop()
    """
)


@pytest.mark.slow
def test_sigterm_stops_training_as_ctrl_c_does(tmp_path):
    """SIGTERM to a trainer's process raises `Terminated` in its main thread (as `rollgym generate`): the trainer
    unwinds, the worker stops, the rollouts in flight are written, exit code 143."""
    script = tmp_path / "train.py"
    script.write_text(SIGTERM_SCRIPT)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143, proc.stderr.read().decode() if proc.stderr else ""
    stopped = [
        json.loads(line)
        for line in (tmp_path / "out" / "rollouts.jsonl").read_text().splitlines()
        if json.loads(line)["async_worker"]["fate"] == "stopped"
    ]
    assert stopped and any(r["turns"] for r in stopped)


def test_a_black_box_agent_through_the_proxy_gives_versioned_token_exact_samples(tool_tok, say, tmp_path):
    from support.proxy import two_call_agent

    from rollgym.agents.jobs import AgentJobs

    answers = {t["question"]: str(t["answer"]) for t in TASKS}

    def reward(row, output, rollout):
        return float(output == answers[row["question"]])

    def sample(prompt, sampling):
        text = tool_tok.decode(prompt)
        return say.text(next(a for q, a in answers.items() if q in text))

    policy = rg.Policy(engine=ScriptedEngine(sample, delay_s=0.05, logprob=-0.25), tokenizer=tool_tok)
    worker = rg.AsyncRolloutWorker(
        "rollgym/Calculator-v0", policy, tasks=TASKS, num_generations=2, concurrency=2, out=tmp_path,
        job_runner=AgentJobs(two_call_agent, reward=reward),
    )  # fmt: skip
    worker.start()
    try:
        first = _take(worker, 2)
        worker.weights.pause()  # a sync under running agents
        worker.weights.resume()
        worker.update_model_version(1)
        later = _take(worker, 4)
    finally:
        worker.stop()
    pushed = [r for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.async_worker.fate == "pushed"]
    rows = {tuple(r.token_view()["prompt_ids"] + r.token_view()["completion_ids"]): r for r in pushed}
    for s in first + later:
        rollout = rows[tuple(s.input_ids.tolist())]  # the sample is the proxy's recorded session, id for id
        assert rollout.error is None and rollout.token_exact and len(rollout.turns) == 2
        assert s.metrics["reward"] == 1.0 and s.model_version in (0, 1)
        assert {lp for lp, m in zip(s.old_log_probs.tolist(), s.completion_mask.tolist(), strict=True) if m} == {-0.25}
        assert all(t.policy_version is not None for t in rollout.turns)
    assert {t.policy_version for r in pushed for t in r.turns} == {0, 1}  # the agents' turns follow the sync
    assert later[-1].model_version == 1
