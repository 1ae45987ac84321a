"""`rollgym generate --model vllm:...` against the real vLLM: every row's sampled ids carry the logprobs a
teacher-forced float32 recomputation gives them in their full context (the training row is token-exact)."""

from __future__ import annotations

import pytest
from support.vllm import assert_token_exact
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.rollouts.output import read_rollouts

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def _generate(tmp_path, real_vllm, *args: str):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["generate", "--model", real_vllm.spec, "--out", str(out), "--seed", "5", *args])
    assert result.exit_code == 0, result.output
    return list(read_rollouts(out / "rollouts.jsonl"))


def test_generate_calculator_over_real_vllm(tmp_path, real_vllm, smollm2_fp32):
    rollouts = _generate(
        tmp_path,
        real_vllm,
        "--env",
        "rollgym/Calculator-v0",
        "--num-tasks",
        "2",
        "--n",
        "2",
        "--max-turns",
        "3",
        "--max-tokens",
        "48",
    )
    assert len(rollouts) == 4 and all(r.error is None for r in rollouts)
    assert all(r.engine == "vllm-server" for r in rollouts)
    for r in rollouts:
        assert_token_exact(r, smollm2_fp32)


@pytest.mark.docker
def test_generate_a_bundled_swe_task_over_real_vllm(tmp_path, real_vllm, smollm2_fp32, base_image):
    (rollout,) = _generate(
        tmp_path,
        real_vllm,
        "--env",
        "rollgym/SWE-v0",
        "--tasks",
        "bundled",
        "--num-tasks",
        "1",
        "--n",
        "1",
        "--max-turns",
        "3",
        "--max-tokens",
        "64",
        "--timeout",
        "600",
    )
    assert rollout.error is None, rollout.error
    assert "resolved" in rollout.reward_components and rollout.turns  # graded, and the model acted in the sandbox
    assert_token_exact(rollout, smollm2_fp32)
