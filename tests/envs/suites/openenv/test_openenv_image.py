"""An OpenEnv server brought as an image runs in rollgym's Docker sandbox (no network; the session carried by a relay
over the attached process's stdio), never on the host: the guessing game played through it is scored as the server
says, its container is gone after the environment closes, and an image whose server never answers is an
infrastructure failure of the rollout that says why."""

from __future__ import annotations

import pytest
from support.openenv import bisecting_policy, openenv_image

import rollgym as rg
from rollgym.envs.sandbox import RUN_ID, list_containers
from rollgym.limits import Limits

pytestmark = [pytest.mark.docker, pytest.mark.slow]
LIMITS = Limits(max_turns=10, max_tokens_per_turn=64)


@pytest.fixture(scope="module")
def guess_image(base_image, tmp_path_factory) -> str:
    return openenv_image(base_image, "guess_env:app", tmp_path_factory.mktemp("openenv-image"))


async def test_an_image_server_runs_in_the_sandbox_and_is_scored_by_the_server(guess_image, tool_tok, say):
    before = {c.name for c in list_containers(run_id=RUN_ID)}
    rollouts = await rg.run_rollouts(
        "openenv/env-v0",
        [{"seed": 1}, {"seed": 3}],  # bisection: 3 wrong guesses each, then the right one
        bisecting_policy(tool_tok, say),
        limits=LIMITS,
        env_kwargs={"image": guess_image},
    )
    for rollout in rollouts:
        assert rollout.error is None, rollout.error
        assert rollout.reward == pytest.approx(0.7) and rollout.stop_reason == "env_terminated"
        assert [c.result for t in rollout.turns for c in t.tool_calls][-1] == "correct" and rollout.token_exact
    assert {c.name for c in list_containers(run_id=RUN_ID)} <= before  # each server's sandbox closed with its env


async def test_an_image_whose_server_never_answers_is_an_infrastructure_failure(guess_image, tool_tok, say):
    server = {"command": "python3 -c 'import sys; sys.exit(3)'", "start_timeout_s": 3}
    (rollout,) = await rg.run_rollouts(
        "openenv/env-v0",
        [{"seed": 1}],
        bisecting_policy(tool_tok, say),
        limits=LIMITS,
        env_kwargs={"image": guess_image, "server": server},
    )
    assert rollout.error is not None and rollout.error.category == "sandbox" and rollout.error.phase == "setup"
    assert "did not answer on port 8000 within 3s" in rollout.error.message
