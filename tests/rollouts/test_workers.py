"""`run_rollouts(workers=N)`: the same rollouts as one process, a dead worker is data, cancelling releases everything.

The policies and environments here are module-level classes: worker processes unpickle them by
importing this module, exactly as they would a user's.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.envs.core import tool
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.engines import UnknownEngineError
from rollgym.rollouts.engines.scripted import ScriptedEngine
from rollgym.rollouts.limits import Limits
from rollgym.rollouts.workers import WorkerStartError, split_slots
from rollgym.rollouts.policy import Policy

TASKS = CalculatorEnv.default_tasks(6)


class Solver:
    """First turn: add(1, 2); then submit the answer of the task in the prompt. Dies on `die_on`."""

    def __init__(self, tok, die_on: str | None = None):
        self.tok, self.die_on = tok, die_on
        self.add = self._call('{"name": "add", "arguments": {"a": 1, "b": 2}}')
        self.submit = {t["question"]: self._call('{"name": "submit", "arguments": {"answer": %d}}' % t["answer"]) for t in TASKS}

    def _call(self, body: str) -> list[int]:
        return self.tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tok.end_of_turn_id]

    def __call__(self, prompt, sampling):
        text = self.tok.decode(prompt)
        if self.die_on and self.die_on in text:
            os._exit(3)  # a worker crashing hard: no cleanup, no goodbye
        question = next(q for q in self.submit if q in text)
        return self.add if text.count("<|im_start|>assistant") == 1 else self.submit[question]


class SlowEnv(CalculatorEnv):
    """A Calculator whose `wait` tool takes a while; setup and teardown leave marker files."""

    def __init__(self, marks: str):
        super().__init__()
        self.marks = Path(marks)

    async def setup(self, task):
        out = await super().setup(task)
        (self.marks / f"setup-{id(self)}-{os.getpid()}").touch()
        return out

    async def teardown(self):
        if getattr(self, "submitted", "unset") != "unset":  # only episodes that were set up
            (self.marks / f"teardown-{id(self)}-{os.getpid()}").touch()

    @tool
    async def wait(self) -> str:
        """Wait a little."""
        await asyncio.sleep(0.3)
        return "waited"


class SlowEnvFactory:
    def __init__(self, marks: Path):
        self.marks = str(marks)

    def __call__(self):
        return SlowEnv(self.marks)


class AlwaysCall:
    """Every turn: call `tool` without arguments."""

    def __init__(self, tok, tool: str):
        self.ids = tok.encode('<tool_call>\n{"name": "%s", "arguments": {}}\n</tool_call>' % tool) + [tok.end_of_turn_id]

    def __call__(self, prompt, sampling):
        return self.ids


class PidEnv(CalculatorEnv):
    """A Calculator with a `pid` tool (which worker ran me); on a `slow` task the tool takes 0.3 s."""

    async def setup(self, task):
        self.slow = bool((task or {}).get("slow"))
        return await super().setup(task)

    @tool
    async def pid(self) -> str:
        """The worker's process id."""
        if self.slow:
            await asyncio.sleep(0.3)
        return str(os.getpid())


class BigEnv(CalculatorEnv):
    """A Calculator whose `big` tool returns 200,000 characters."""

    @tool
    async def big(self) -> str:
        """A large output."""
        return "x" * 200_000


class OddArgsEnv(PidEnv):
    """Records a tool call whose arguments hold values JSON cannot represent (an env's own bookkeeping):
    one pickle can carry (a set) and one it cannot (a lock)."""

    odd = {"when": {3, 4}}

    async def astep(self, action):
        reply, reward, terminated, truncated, info = await super().astep(action)
        info["tool_calls"] = [call.model_copy(update={"arguments": dict(self.odd)}) for call in info["tool_calls"]]
        return reply, reward, terminated, truncated, info


class UnpicklableArgsEnv(OddArgsEnv):
    odd = {"when": threading.Lock()}


def workers_alive() -> list:
    return [p for p in multiprocessing.active_children() if p.name == "rollgym-worker" and p.is_alive()]


def token_views(rollouts):
    return [(r.task_id, r.sample_index, r.reward, r.stop_reason, r.token_view()) for r in rollouts]


async def test_workers_give_the_same_rollouts_as_one_process(tool_tok):
    seen = []
    one = await run_rollouts("rollgym/Calculator-v0", TASKS, Policy(engine=ScriptedEngine(Solver(tool_tok)), tokenizer=tool_tok), n=2, concurrency=4)
    two = await run_rollouts("rollgym/Calculator-v0", TASKS, Policy(engine=ScriptedEngine(Solver(tool_tok)), tokenizer=tool_tok), n=2, concurrency=4,
                             workers=2, on_result=seen.append)
    assert len(two) == len(seen) == 12 and all(r.error is None for r in two)
    assert all(r.reward == 1.0 and len(r.turns) == 2 for r in two)
    assert token_views(two) == token_views(one)  # same ids, masks, logprobs, rewards, in the same order
    assert {r.id for r in two} == {r.id for r in seen}


async def test_a_dead_worker_loses_only_what_it_held(tool_tok):
    # concurrency 2 over 2 workers: 1 slot + 1 prefetched job each, dealt round robin, so worker A holds
    # tasks 0 and 2 and worker B tasks 1 and 3. B dies on task 1: tasks 1 and 3 are errors; tasks 4
    # and 5, never handed to B, run on A.
    engine = ScriptedEngine(Solver(tool_tok, die_on=TASKS[1]["question"]))
    seen = []
    rollouts = await run_rollouts("rollgym/Calculator-v0", TASKS, Policy(engine=engine, tokenizer=tool_tok), n=1, concurrency=2, workers=2,
                                  on_result=seen.append)
    assert [r.task_id for r in rollouts] == [t["task_id"] for t in TASKS]  # every job is accounted for
    assert len(seen) == 6
    lost = {i for i, r in enumerate(rollouts) if r.error is not None}
    assert lost == {1, 3}
    for i in lost:
        error = rollouts[i].error
        assert error.category == "internal" and error.type == "WorkerDied" and "exited (code 3)" in error.message
        assert rollouts[i].stop_reason == "error" and rollouts[i].sample_index == 0
    assert all(rollouts[i].reward == 1.0 for i in {0, 2, 4, 5})


async def test_a_worker_that_cannot_start_stops_the_run_with_its_traceback(tool_tok):
    # Every worker builds its engine from the policy's spec: a model that cannot load is a setup error,
    # not rollouts written as errors. (A spec that names no engine fails before any worker starts.)
    with pytest.raises(UnknownEngineError, match="no-such-engine"):
        await run_rollouts("rollgym/Calculator-v0", TASKS[:3], "no-such-engine:x", workers=2)
    seen = []
    with pytest.raises(WorkerStartError, match="no-such-model-dir"):
        await run_rollouts("rollgym/Calculator-v0", TASKS[:3], Policy("hf:/no-such-model-dir", tokenizer=tool_tok), workers=2,
                           on_result=seen.append)
    assert seen == [] and not workers_alive()


def test_concurrency_is_shared_out_exactly():
    assert split_slots(1, 4) == [1]  # never more processes (or rollouts) than the concurrency
    assert split_slots(16, 3) == [6, 5, 5] and split_slots(8, 2) == [4, 4]


async def test_concurrency_one_means_one_environment_at_a_time(tool_tok):
    rollouts = await run_rollouts(PidEnv, TASKS[:4], Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "pid")), tokenizer=tool_tok), n=1,
                                  concurrency=1, workers=2, limits=Limits(max_turns=1))
    assert len({r.turns[0].env_messages[0]["content"] for r in rollouts}) == 1  # one worker process ran them all


def test_large_tasks_and_results_do_not_deadlock_the_pipes(tool_tok):
    # Each task carries 300 kB and each result 400 kB: far more than a pipe holds, in both directions at once.
    # A deadlock would block the event loop itself, so the batch runs in a thread the test can give up on.
    big = [dict(t, notes="n" * 300_000) for t in CalculatorEnv.default_tasks(12)]
    out = {}

    def batch():
        out["rollouts"] = asyncio.run(run_rollouts(BigEnv, big, Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "big")), tokenizer=tool_tok), n=1,
                                                   concurrency=8, workers=2, limits=Limits(max_turns=2)))

    thread = threading.Thread(target=batch, daemon=True)
    thread.start()
    thread.join(timeout=300)
    assert not thread.is_alive(), "the batch hung: parent and workers are blocked writing to each other"
    rollouts = out["rollouts"]
    assert len(rollouts) == 12 and all(r.error is None for r in rollouts)
    assert all(len(r.turns[0].env_messages[0]["content"]) == 200_000 for r in rollouts)


async def test_odd_values_arrive_as_in_one_process_or_as_text(tool_tok):
    """Results cross the process boundary pickled, so a value JSON cannot hold arrives as itself; a
    rollout pickle cannot take arrives as its JSON line, with the value as text."""
    run = dict(n=1, concurrency=2, workers=2, limits=Limits(max_turns=1))
    kept = await run_rollouts(OddArgsEnv, TASKS[:2], Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "pid")), tokenizer=tool_tok), **run)
    assert all(r.error is None and r.turns[0].tool_calls[0].arguments["when"] == {3, 4} for r in kept)
    texts = await run_rollouts(UnpicklableArgsEnv, TASKS[:2], Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "pid")), tokenizer=tool_tok), **run)
    assert all(r.error is None for r in texts)
    assert all(r.turns[0].tool_calls[0].arguments["when"].startswith("<unlocked _thread.lock") for r in texts)


def test_only_records_and_built_in_values_cross_pickled():
    """A worker pickles a rollout only when the parent can surely load it back; `__main__` in text is fine."""
    from rollgym.rollouts.records import Rollout, Turn
    from rollgym.rollouts.workers import _decode, _encode

    plain = Rollout(task_id="t", turns=[Turn(index=0, prompt_len=1, message={"content": 'if __name__ == "__main__":'},
                                             env_messages=[{"role": "tool", "content": (1, 2)}])])
    raw = _encode(3, 1, plain)
    assert raw[:1] == b"R" and _decode(raw) == (3, 1, plain)
    odd = plain.model_copy(update={"meta": {"clock": threading.Lock()}})
    raw = _encode(3, 1, odd)
    assert raw[:1] == b"J"
    assert _decode(raw)[2].meta["clock"].startswith("<unlocked _thread.lock")


async def test_an_on_result_that_raises_stops_the_run_and_every_worker(tool_tok):
    def explode(rollout):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await run_rollouts("rollgym/Calculator-v0", TASKS, Policy(engine=ScriptedEngine(Solver(tool_tok)), tokenizer=tool_tok), n=2, concurrency=4,
                           workers=2, on_result=explode)
    assert not workers_alive()


async def test_sigterm_to_a_worker_releases_its_environments(tool_tok, tmp_path):
    batch = asyncio.create_task(run_rollouts(SlowEnvFactory(tmp_path), TASKS, Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "wait")), tokenizer=tool_tok), n=2, concurrency=4, workers=2, limits=Limits(max_turns=4)))
    for _ in range(200):  # until both workers have environments up
        await asyncio.sleep(0.05)
        if len({p.name.rsplit("-", 1)[1] for p in tmp_path.glob("setup-*")}) == 2:
            break
    victim = next(p for p in multiprocessing.active_children() if p.name == "rollgym-worker")
    victim.terminate()
    rollouts = await asyncio.wait_for(batch, timeout=300)
    assert len(rollouts) == 12  # every job is accounted for: finished by the survivor, or reported lost
    lost = [r for r in rollouts if r.error is not None]
    assert lost and all(r.error.type == "WorkerDied" for r in lost)
    setups = sorted(p.name.split("-", 1)[1] for p in tmp_path.glob("setup-*"))
    teardowns = sorted(p.name.split("-", 1)[1] for p in tmp_path.glob("teardown-*"))
    assert setups == teardowns  # the terminated worker released what it had set up
    assert not workers_alive()


async def test_jobs_go_to_whichever_worker_is_free(tool_tok, tmp_path):
    # Task 0 is slow (5 turns of a 0.3 s tool). Its worker also holds the one job prefetched with it
    # (task 2); every later job goes to the free worker, where round-robin shards would have put task 4
    # behind the slow one.
    slow = [dict(TASKS[0], slow=True)] + TASKS[1:]
    rollouts = await run_rollouts(PidEnv, slow, Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "pid")), tokenizer=tool_tok), n=1,
                                  concurrency=2, workers=2, limits=Limits(max_turns=5))
    pids = [r.turns[0].env_messages[0]["content"] for r in rollouts]
    assert all(r.error is None for r in rollouts)
    assert len(set(pids)) == 2
    assert pids[4] != pids[0] and pids[5] != pids[0]


async def test_cancelling_stops_every_worker_and_releases_every_environment(tool_tok, tmp_path):
    seen = []
    batch = asyncio.create_task(run_rollouts(SlowEnvFactory(tmp_path), TASKS, Policy(engine=ScriptedEngine(AlwaysCall(tool_tok, "wait")), tokenizer=tool_tok),
                                             n=2, concurrency=4, workers=2, limits=Limits(max_turns=20),
                                             on_result=seen.append))
    for _ in range(200):  # until every worker has environments up
        await asyncio.sleep(0.05)
        if len({p.name.rsplit("-", 1)[1] for p in tmp_path.glob("setup-*")}) == 2:
            break
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    setups = sorted(p.name.split("-", 1)[1] for p in tmp_path.glob("setup-*"))
    teardowns = sorted(p.name.split("-", 1)[1] for p in tmp_path.glob("teardown-*"))
    assert setups and setups == teardowns  # every environment that was set up was released
    assert not workers_alive()
    assert seen == []  # nothing finished: 20 turns of 0.3 s each had no time to


def test_workers_need_what_can_cross_a_process_boundary(tool_tok):
    engine = ScriptedEngine(lambda prompt, sampling: [])  # a lambda cannot be pickled

    with pytest.raises(Exception, match="pickle|lambda"):
        asyncio.run(run_rollouts("rollgym/Calculator-v0", TASKS[:2], Policy(engine=engine, tokenizer=tool_tok), workers=2))
