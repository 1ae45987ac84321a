"""A real SmolLM2-135M Calculator episode (rollgym's in-process engine), generated once for the trainer rooms' tests:
its sampled ids and logprobs are what each converter must carry intact (and what a trainer's loss recomputes)."""

from __future__ import annotations

import pytest

import rollgym as rg
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.limits import Limits
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.records import Rollout


@pytest.fixture(scope="session")
def smollm2_rollout(tmp_path_factory) -> Rollout:
    run = tmp_path_factory.mktemp("smollm2") / "run"
    rg.generate(
        "rollgym/Calculator-v0",
        rg.Policy("smollm2-135m"),
        out=run,
        tasks=CalculatorEnv.default_tasks(1),
        n=1,
        limits=Limits(max_turns=2, max_tokens_per_turn=24),
    )
    (rollout,) = read_rollouts(run / "rollouts.jsonl")
    assert rollout.engine != "scripted" and rollout.turns and rollout.turns[0].completion_ids
    return rollout
