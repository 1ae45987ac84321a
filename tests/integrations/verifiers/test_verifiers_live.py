"""The verifiers / prime-rl live path with verifiers' own code: rollgym episodes sampled through the request
verifiers' `TrainClient` sends to prime-rl's vLLM (`/inference/v1/generate`, verifiers' own client and renderers' own
parsing, live_side.py in verifiers 0.4.0's venv) come back as verifiers' `vf.WireEpisode`; each branch is checked
against what the server was sent and answered: token-in (each turn's prompt is the branch's prefix), the sampled mask
exactly on the sampled ids, their logprobs full-sequence and unshifted, a dead server an errored trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.trainer_venv import run_side

from rollgym.engines.default_model import smollm2_dir

pytestmark = pytest.mark.slow  # verifiers' venv and the real SmolLM2: a minute or more here


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vf-live")
    side = Path(__file__).with_name("live_side.py")
    return run_side("verifiers", side, [tmp / "out.json", smollm2_dir()], tmp / "out.json")


def test_scripted_tool_episode_is_a_trace_with_the_servers_exact_ids(live):
    out = live["scripted"]
    assert out["reward"] == 1.0 and out["has_error"] is False
    [branch] = out["branches"]
    ids, mask, logprobs = branch["token_ids"], branch["sampled_mask"], branch["logprobs"]
    assert len(ids) == len(mask) == len(logprobs)
    expected_mask = [False] * len(ids)
    for request, completion in zip(out["requests"], out["completions"], strict=True):
        start = len(request["token_ids"])
        assert ids[:start] == request["token_ids"]  # token-in: the turn's prompt is the branch so far
        assert ids[start : start + len(completion)] == completion  # the server's ids, as sampled
        expected_mask[start : start + len(completion)] = [True] * len(completion)
        assert logprobs[start : start + len(completion)] == [-0.25] * len(completion)
        sp = request["sampling_params"]
        assert sp["logprobs"] == 1 and sp["skip_special_tokens"] is False and sp["stop_token_ids"]
    assert mask == expected_mask  # the tool result's ids (between the turns) are not sampled
    assert ids == out["requests"][-1]["token_ids"] + out["completions"][-1]


def test_the_real_smollm2_through_the_generate_endpoint(live):
    out = live["real"]
    assert out["has_error"] is False
    [branch] = out["branches"]
    first = out["requests"][0]["token_ids"]
    assert branch["token_ids"][: len(first)] == first and not any(branch["sampled_mask"][: len(first)])
    sampled = [lp for lp, m in zip(branch["logprobs"], branch["sampled_mask"], strict=True) if m]
    assert sampled and all(lp <= 0.0 for lp in sampled) and any(lp < 0.0 for lp in sampled)


def test_a_dead_server_is_an_errored_trace_that_prime_rl_drops(live):
    assert live["dead"]["has_error"] is True


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vf-served")
    side = Path(__file__).with_name("live_env_side.py")
    return run_side("verifiers", side, [tmp / "out.json", smollm2_dir()], tmp / "out.json")


def test_prime_rls_route_verifiers_env_server_runs_rollgym_episodes(served):
    """verifiers' own `EnvServer` loads `RollgymLiveEnv` from a taskset package and verifiers' own `EnvClient` gets
    the episode as prime-rl's orchestrator asks for one: the trace streamed back holds rollgym's exact ids."""
    assert served["ok"] is True and served["reward"] == 1.0 and served["has_error"] is False
    ids, mask, logprobs = served["token_ids"], served["sampled_mask"], served["logprobs"]
    expected_mask = [False] * len(ids)
    for request, completion in zip(served["requests"], served["completions"], strict=True):
        start = len(request["token_ids"])
        assert ids[:start] == request["token_ids"] and ids[start : start + len(completion)] == completion
        expected_mask[start : start + len(completion)] = [True] * len(completion)
        assert logprobs[start : start + len(completion)] == [-0.25] * len(completion)
        assert request["sampling_params"]["temperature"] == 0.7  # the run's sampling, from prime-rl's request
    assert mask == expected_mask
