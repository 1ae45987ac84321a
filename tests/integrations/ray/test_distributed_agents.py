"""Agent CLIs on Ray actors (issue 28, item 6): `rg.run_agents(NAME, ..., ray=...)` runs each agent run as a job of
the real 2-node cluster's actors; each actor serves its own recording proxy from its own engine (SmolLM2, built from
the policy's spec), and each run goes into its task's sandbox as in one process. The rollouts come back token-exact
and graded, one per (task, sample), in the run's output folder."""

from __future__ import annotations

import json

import pytest

import rollgym as rg
from rollgym.agents import agent_spec
from rollgym.envs.swe import load_bundled_tasks
from rollgym.errors import UsageError
from rollgym.integrations.ray import RayConfig

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_agent_runs_are_jobs_of_ray_actors(cluster, tmp_path, docker_engine):
    try:
        agent_spec("mini-swe-agent").executable()
    except UsageError as exc:
        print(f"{exc}; skipping")
        pytest.skip(str(exc))
    rows = [t.model_dump(mode="json") for t in load_bundled_tasks()[:2]]
    summary = rg.run_agents(
        "mini-swe-agent",
        rows,
        "smollm2-135m",
        out=tmp_path / "run",
        n=2,
        concurrency=2,
        agent_options={"step_limit": 1, "textbased": True, "max_output_tokens": 32, "timeout_s": 300},
        ray=RayConfig(actors=2, resources={"spread": 1}),  # one actor per node
    )
    rollouts = list(rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl"))
    assert summary.rollouts == 4 and len(rollouts) == 4
    assert sorted((r.task_id, r.sample_index) for r in rollouts) == sorted(
        (row["instance_id"], s) for row in rows for s in range(2)
    )
    for rollout in rollouts:
        assert rollout.turns and rollout.token_exact, json.dumps(rollout.error.model_dump() if rollout.error else None)
        assert rollout.error is None or rollout.error.category == "agent", rollout.error  # mini may end unsubmitted
        if rollout.error is None:
            assert rollout.reward_components["infra_failure"] == 0.0
