"""`make_rollout_func(..., ray=...)`: a TRL step's rollouts run on the cluster, the actors kept warm between
steps, and the columns are the ones one process gives."""

from __future__ import annotations

import json

from support.ray import TASKS, Solver

from rollgym.engines.scripted import ScriptedEngine
from rollgym.integrations.ray import RayConfig
from rollgym.integrations.ray.pool import _POOL
from rollgym.integrations.trl.rollout_func import make_rollout_func
from rollgym.limits import Limits
from rollgym.rollouts.policy import Policy

SAME = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "reward_correct", "rollgym_turns")


def test_a_trl_step_runs_on_the_cluster_with_the_columns_of_one_process(cluster, tool_tok):
    prompts = [json.dumps(t) for t in TASKS[:3] for _ in range(2)]  # GRPO: each prompt twice
    local = make_rollout_func(
        "rollgym/Calculator-v0",
        Policy(engine=ScriptedEngine(Solver(tool_tok)), tokenizer=tool_tok),
        limits=Limits(max_turns=3),
    )
    remote = make_rollout_func(
        "rollgym/Calculator-v0",
        Policy(engine=ScriptedEngine(Solver(tool_tok)), tokenizer=tool_tok),
        limits=Limits(max_turns=3),
        ray=RayConfig(actors=2, resources={"spread": 1}),
    )
    expected = local(prompts, None)
    try:
        for _ in range(2):  # two steps: the second reuses the warm actors
            cols = remote(prompts, None)
            assert {k: cols[k] for k in SAME} == {k: expected[k] for k in SAME}
            assert sum(len(members) for members in _POOL.values()) == 2
        assert cols["reward"] == [1.0] * 6
        assert [r.group_id for r in remote.last_rollouts] == [r.group_id for r in local.last_rollouts]
    finally:
        from rollgym.integrations.ray.pool import drop_pool

        drop_pool()
