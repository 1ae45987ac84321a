"""Jobs and executors: a batch is `RolloutJob` records run by an `Executor`; local and Ray are two of them, and
any object with the protocol's `run` takes their place."""

from __future__ import annotations

import pytest

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import UsageError
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.jobs import EXECUTORS, LocalExecutor, RolloutJob, executor_for
from rollgym.rollouts.policy import Policy

TASKS = CalculatorEnv.default_tasks(2)


class CountingExecutor(LocalExecutor):
    """The local executor, counting the jobs it is given: an executor of the user's own."""

    def __init__(self) -> None:
        self.jobs: list[RolloutJob] = []

    async def run(self, spec, jobs, *, concurrency, on_result):
        self.jobs += list(jobs)
        await super().run(spec, jobs, concurrency=concurrency, on_result=on_result)


async def test_run_rollouts_hands_its_jobs_to_the_executor_given(tool_tok, say):
    executor = CountingExecutor()
    policy = Policy(engine=ScriptedEngine(lambda p, s: say.text("7")), tokenizer=tool_tok)
    rollouts = await run_rollouts(
        "rollgym/Calculator-v0", TASKS, policy, n=2, executor=executor, skip={(TASKS[0]["task_id"], 1)}
    )
    assert [(j.task_id, j.sample_index) for j in executor.jobs] == [("calc-0", 0), ("calc-1", 0), ("calc-1", 1)]
    assert all(isinstance(j, RolloutJob) and j.key == (j.task_index, j.sample_index) for j in executor.jobs)
    assert [(r.task_id, r.sample_index) for r in rollouts] == [("calc-0", 0), ("calc-1", 0), ("calc-1", 1)]


def test_which_executor_a_call_gets():
    assert isinstance(executor_for(), LocalExecutor)
    mine = CountingExecutor()
    assert executor_for(mine) is mine
    with pytest.raises(UsageError, match="either executor= or ray="):
        executor_for(mine, ray=True)
    ray_executor = executor_for(workers=3)  # found by its registered name, loaded only now
    assert type(ray_executor).__name__ == "RayExecutor" and ray_executor.config.actors == 3
    assert EXECUTORS["ray"].startswith("rollgym.integrations.ray.")


async def test_a_large_batch_is_admitted_as_slots_free_and_the_loop_keeps_answering(tool_tok, say, monkeypatch):
    """A batch holds at most `concurrency` rollout tasks, and admits a bounded number per turn of the event loop,
    so other work on the loop (a timer, a server) runs while thousands of rollouts start."""
    import asyncio

    from rollgym.rollouts import jobs as jobs_module

    monkeypatch.setattr(jobs_module, "ADMITTED_PER_TICK", 8)
    alive, most = 0, 0
    started: list[int] = []
    ticks = 0

    class CountedCalculator(CalculatorEnv):
        async def setup(self, task):
            nonlocal alive, most
            alive += 1
            most = max(most, alive)
            started.append(ticks)
            return await super().setup(task)

        async def aclose(self):
            nonlocal alive
            alive -= 1
            await super().aclose()

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    probe = asyncio.create_task(ticker())
    policy = Policy(engine=ScriptedEngine(lambda p, s: say.text("7")), tokenizer=tool_tok)
    tasks = CalculatorEnv.default_tasks(40)
    try:
        few = await run_rollouts(CountedCalculator, tasks, policy, concurrency=5)
        assert len(few) == 40 and all(r.error is None for r in few) and most <= 5
        started.clear()
        many = await run_rollouts(CountedCalculator, tasks, policy, concurrency=40)
    finally:
        probe.cancel()
    assert len(many) == 40 and all(r.error is None for r in many)
    # 40 rollouts admitted 8 per turn of the loop: the other task ran in between, so they started on >= 5 ticks
    assert len(set(started)) >= 5, started
