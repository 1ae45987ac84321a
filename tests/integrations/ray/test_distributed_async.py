"""`rg.AsyncRolloutWorker(..., ray=...)`: the worker's groups run on the cluster's actors and come back scored, in
their groups, as in one process."""

from __future__ import annotations

from support.ray import TASKS, Solver

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.integrations.ray import RayConfig
from rollgym.integrations.ray.pool import drop_pool
from rollgym.rollouts.output import read_rollouts


def test_the_async_worker_runs_its_groups_on_ray_actors(cluster, tool_tok, tmp_path):
    """... and the actors' turns carry the weights version that sampled them, following the driver's syncs."""
    worker = rg.AsyncRolloutWorker(
        "rollgym/Calculator-v0",
        rg.Policy(engine=ScriptedEngine(Solver(tool_tok)), tokenizer=tool_tok),
        tasks=TASKS[:2],
        num_generations=2,
        concurrency=2,
        limits=rg.Limits(max_turns=3),
        ray=RayConfig(actors=1, resources={"spread": 1}),
        out=tmp_path,
    )
    worker.update_model_version(3)
    worker.start()
    try:
        samples = [worker.rollout_buffer.get(timeout=120) for _ in range(4)]
        worker.weights.pause()  # a sync, as the trainer's weight transfer does it
        worker.weights.resume()
        worker.update_model_version(4)
        later = [worker.rollout_buffer.get(timeout=120) for _ in range(4)]
    finally:
        worker.stop()
    turns = [[t.policy_version for t in r.turns] for r in read_rollouts(tmp_path / "rollouts.jsonl") if r.turns]
    assert all(v in (3, 4) for versions in turns for v in versions), turns  # every turn says what sampled it
    assert all(versions == sorted(versions) for versions in turns)
    assert [3, 3] in turns and [4, 4] in turns  # the actors followed the sync
    assert later[-1].model_version == 4
    try:
        assert [s.group_id for s in samples] == [0, 0, 1, 1]  # groups in turn, each kept together
        assert all(s.metrics["reward"] == 1.0 and s.model_version == 3 for s in samples)  # the Solver solves them
        assert all(int(s.completion_mask.sum()) > 0 for s in samples)
    finally:
        drop_pool()
