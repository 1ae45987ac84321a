"""Infrastructure failures are not results (issue 17, item 7): a run whose every rollout failed on the
engine exits 1, `--resume` runs those rollouts again (the old rows kept in retried.jsonl), the agent's own
failures are never rerun, and `--no-retry-errors` keeps everything as it is. Real HTTP to the vLLM stand-in,
whose fault switch answers 503."""

from __future__ import annotations

from collections import Counter

import pytest

from rollgym.cli.generate import run_generate
from rollgym.engines import SamplingParams
from rollgym.engines.default_model import smollm2_dir
from rollgym.limits import Limits
from rollgym.rollouts.output import RETRIED_FILE, RolloutWriter, is_infra_failure, read_rollouts
from rollgym.rollouts.records import ErrorRecord, Rollout

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"  # what the `standin` fixture serves (tests/faults/conftest.py)


def _said(capfd) -> str:
    """What the run printed, without rich's line wrapping."""
    return " ".join(capfd.readouterr().err.split())


def _run(server, out, **kw) -> int:
    return run_generate(
        env="rollgym/Calculator-v0",
        tasks=None,
        model=f"vllm:{server.base_url}/v1#{MODEL}",
        n=2,
        concurrency=4,
        out=str(out),
        num_tasks=2,
        limits=Limits(max_turns=1, max_tokens_per_turn=8),
        sampling=SamplingParams(seed=1),
        tokenizer=str(smollm2_dir()),
        engine_kwargs={"max_retries": 0},
        **kw,
    )


def test_a_run_that_only_failed_on_the_engine_exits_1_and_resume_runs_it_again(standin, tmp_path, capfd):
    server, control = standin
    control.__init__()
    control.fail_next, control.fail_status = 10_000, 503
    assert _run(server, tmp_path, resume=False) == 1
    err = _said(capfd)
    assert "every rollout (4) failed on infrastructure (engine: 4)" in err and "--resume" in err
    first = list(read_rollouts(tmp_path / "rollouts.jsonl"))
    assert len(first) == 4 and all(is_infra_failure(r) for r in first)

    control.fail_next = 0  # the server is back
    assert _run(server, tmp_path, resume=True) == 0
    assert "4 infrastructure failures run again" in _said(capfd)
    rows = list(read_rollouts(tmp_path / "rollouts.jsonl"))
    assert Counter(r.key for r in rows) == Counter(r.key for r in first)  # each (task, sample) exactly once
    assert not any(r.error for r in rows)
    assert [r.id for r in read_rollouts(tmp_path / RETRIED_FILE)] == [r.id for r in first]  # nothing lost


def test_no_retry_errors_keeps_the_failures(standin, tmp_path):
    server, control = standin
    control.__init__()
    control.fail_next = 10_000
    assert _run(server, tmp_path, resume=False) == 1
    control.fail_next = 0
    assert _run(server, tmp_path, resume=True, retry_errors=False) == 1  # still all failed: nothing was rerun
    assert not (tmp_path / RETRIED_FILE).exists()
    assert len(list(read_rollouts(tmp_path / "rollouts.jsonl"))) == 4


def test_partial_engine_failures_exit_0_and_say_how_to_rerun(standin, tmp_path, capfd):
    server, control = standin
    control.__init__()
    control.fail_next = 1  # one request fails, the others succeed
    assert _run(server, tmp_path, resume=False) == 0
    assert "1 of 4 rollouts failed on infrastructure (engine: 1)" in _said(capfd)


def test_only_infrastructure_categories_are_set_aside(tmp_path):
    """The agent's failures, the environment's and timeouts are results: resume keeps them."""
    rows = [
        Rollout(task_id=f"t{i}", stop_reason="error", error=ErrorRecord(category=c, type="X", message="m"))
        for i, c in enumerate(["engine", "sandbox", "internal", "agent", "environment", "timeout", "tokenization"])
    ]
    rows.append(Rollout(task_id="ok"))
    writer = RolloutWriter(tmp_path)
    for r in rows:
        writer.write(r)
    writer.close()
    resumed = RolloutWriter(tmp_path, resume=True)
    resumed.close()
    assert resumed.retried == 3
    assert {k[0] for k in resumed.done} == {"t3", "t4", "t5", "t6", "ok"}
    assert [r.task_id for r in read_rollouts(tmp_path / RETRIED_FILE)] == ["t0", "t1", "t2"]


@pytest.mark.slow
async def test_the_default_retry_budget_rides_out_a_server_restart(standin):
    """A server that refuses 3 requests in a row (a restart) costs seconds, not the rollout; the default
    budget's backoff reaches tens of seconds before giving up."""
    import time

    from rollgym.engines.http_client import DEFAULT_BACKOFF_S, DEFAULT_MAX_BACKOFF_S, DEFAULT_MAX_RETRIES
    from rollgym.engines.vllm_server import VLLMServerEngine

    server, control = standin
    control.__init__()
    control.fail_next = 3
    engine = VLLMServerEngine(f"{server.base_url}/v1", MODEL)
    try:
        t0 = time.perf_counter()
        gen = await engine.generate([1, 2, 3], SamplingParams(max_tokens=4, seed=0))
        waited = time.perf_counter() - t0
    finally:
        await engine.aclose()
    assert gen.completion_ids and len(control.requests) == 4
    assert waited >= 0.5 * (1 + 2 + 4) * DEFAULT_BACKOFF_S  # jittered backoff: at least half of each step
    worst = sum(min(DEFAULT_MAX_BACKOFF_S, DEFAULT_BACKOFF_S * 2**a) for a in range(DEFAULT_MAX_RETRIES))
    assert worst >= 30, f"the whole budget is only {worst} s"
