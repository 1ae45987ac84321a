"""An agent on another Docker host (a second daemon on this machine: its own roots and socket, no bridge) reaches
its proxy session the same way: its mounts and gateway socket are this machine's paths, which that daemon sees."""

from __future__ import annotations

import pytest
from support.agent import SOLVER, ScriptAgent

import rollgym as rg
from rollgym.envs.swe import load_bundled_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def smollm(tool_tok):
    from rollgym.engines.transformers_engine import TransformersEngine

    return rg.Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)


def test_an_agent_on_another_docker_host_reaches_its_session_the_same_way(smollm, tmp_path, docker2):
    row = load_bundled_tasks()[1].model_dump(mode="json")
    rg.run_agents(
        ScriptAgent(SOLVER, timeout_s=300), [row], smollm, out=tmp_path / "run", sandbox={"docker_host": docker2}
    )
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert rollout.error is None and rollout.token_exact and rollout.reward == 1.0, (rollout.error, rollout.reward)
