"""Does training on rollgym's rollouts make a model better? TRL's `GRPOTrainer`, sampling through rollgym's
`rollout_func`, trains the embedded model that calls tools (Qwen2.5-Coder-0.5B-Instruct, full fine-tuning) on the
Calculator (multi-turn, tools) on CPU; held-out tasks (other questions than the training ones) are evaluated before
training, every few steps and after, for each seed.

Writes the curve (held-out reward and tool-call success vs step, one line per seed) as a PNG and the figures as
JSON, and prints them (docs/performance.md). The reward trained on is the environment's (1 for the right answer)
plus 0.2 for a rollout whose tool calls all parsed and ran (a format reward, as tool-use GRPO recipes use); the
held-out figures are the environment's reward alone and tool-call success: the share of rollouts that made tool
calls, all of which parsed and ran. Needs `pip install 'rollgym[bench]'` (TRL, datasets, matplotlib) and about 16 GB
of memory. The default run (2 seeds, 10 steps of one GRPO group of 4) takes about 50 minutes on 2 CPU cores;
`--steps 2 --eval-every 1 --eval-tasks 2` checks the script in a few minutes.
Run: `.venv/bin/python benchmarks/bench_learning.py [--seeds 0 1] [--steps 10] [--lr 2e-6] [--png PATH] [--json PATH]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ENV = "rollgym/Calculator-v0"
FORMAT_BONUS = 0.2
ROOT = Path(__file__).resolve().parents[1]


def tool_format_reward(rollgym_tool_calls=None, rollgym_tool_failures=None, rollgym_parse_errors=None, **_: Any):
    """FORMAT_BONUS for a rollout that made tool calls, all of which parsed and ran; else 0."""
    return [
        FORMAT_BONUS if calls and not failures and not errors else 0.0
        for calls, failures, errors in zip(rollgym_tool_calls, rollgym_tool_failures, rollgym_parse_errors, strict=True)
    ]


def split_tasks(train: int, held_out: int) -> tuple[list[dict], list[dict]]:
    """Training tasks (seed 0) and held-out tasks (seed 1) whose questions are none of the training ones."""
    from rollgym.envs.builtin.calculator import CalculatorEnv

    train_tasks = CalculatorEnv.default_tasks(train, seed=0)
    seen = {t["question"] for t in train_tasks}
    held = [t for t in CalculatorEnv.default_tasks(held_out * 2, seed=1) if t["question"] not in seen][:held_out]
    return train_tasks, held


def evaluate(trainer: Any, tasks: list[dict], samples: int, limits: Any, seed: int) -> dict[str, float]:
    """Held-out figures with the trainer's current weights: mean reward, tool-call success, sampled tokens."""
    from rollgym.engines.base import SamplingParams
    from rollgym.integrations.trl.rollout_func import policy_from_trainer
    from rollgym.rollouts.batch import run_rollouts

    policy = policy_from_trainer(trainer)  # the model's own template; rollgym's ChatML tools one where it has none
    sampling = SamplingParams(temperature=1.0, seed=seed)
    model = trainer.accelerator.unwrap_model(trainer.model)
    was_training = model.training
    model.eval()
    try:
        rollouts = asyncio.run(
            run_rollouts(
                ENV, tasks, policy, n=samples, concurrency=len(tasks) * samples, limits=limits, sampling=sampling
            )
        )
    finally:
        model.train(was_training)
    metrics = [r.metrics() for r in rollouts]
    ran = [m["tool_calls"] > 0 and not m["tool_failures"] and not m["parse_errors"] for m in metrics]
    return {
        "reward": statistics.fmean(r.reward for r in rollouts),
        "tool_call_success": statistics.fmean(float(x) for x in ran),
        "sampled_tokens": statistics.fmean(m["sampled_tokens"] for m in metrics),
        "errors": float(sum(r.error is not None for r in rollouts)),
    }


def train_one_seed(seed: int, opts: argparse.Namespace) -> list[dict[str, float]]:
    """One GRPO run; the held-out figures at step 0, every `eval_every` steps and at the last step."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    import rollgym as rg

    train_tasks, held_out = split_tasks(opts.train_tasks, opts.eval_tasks)
    limits = rg.Limits(max_turns=opts.max_turns, max_tokens_per_turn=opts.max_tokens)
    points: list[dict[str, float]] = []

    def record(step: int) -> None:
        t = time.perf_counter()
        point = {
            "seed": seed,
            "step": step,
            **evaluate(trainer, held_out, opts.eval_samples, limits, seed),
        }
        point["eval_s"] = time.perf_counter() - t
        points.append(point)
        print(json.dumps(point), flush=True)

    class HeldOutEval(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            last = last_step(opts)
            if state.global_step % opts.eval_every == 0 or state.global_step == last:
                record(state.global_step)
            if state.global_step >= last:
                control.should_training_stop = True

    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="rollgym-learning-"),
        max_steps=opts.steps,
        per_device_train_batch_size=opts.batch,
        num_generations=opts.generations,
        max_completion_length=opts.max_tokens,
        learning_rate=opts.lr,
        beta=0.0,  # no reference model: half the forward passes, as DAPO and Dr. GRPO train
        temperature=1.0,
        use_cpu=True,
        bf16=False,  # TRL defaults to bf16, which a CPU emulates slowly
        gradient_checkpointing=False,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=seed,
        data_seed=seed,
    )
    func = rg.make_rollout_func(ENV, limits=limits)
    dataset = Dataset.from_list([{"prompt": json.dumps(t)} for t in train_tasks])
    trainer = GRPOTrainer(
        str(rg.model_dir(opts.model)),
        args=config,
        train_dataset=dataset,
        reward_funcs=[rg.trl.env_reward, tool_format_reward],
        rollout_func=func,
        callbacks=[HeldOutEval()],
    )
    record(0)
    trainer.train()
    return points


def spread_verdict(points: list[dict[str, float]], key: str) -> str:
    """Whether the mean change (last - first) across seeds is outside the seed-to-seed spread of the start."""
    seeds = sorted({p["seed"] for p in points})
    first = [min((p for p in points if p["seed"] == s), key=lambda p: p["step"])[key] for s in seeds]
    last = [max((p for p in points if p["seed"] == s), key=lambda p: p["step"])[key] for s in seeds]
    change = statistics.fmean(b - a for a, b in zip(first, last, strict=True))
    spread = max(first + last) - min(first + last) if len(seeds) < 2 else max(first) - min(first)
    spread_end = max(last) - min(last)
    outside = abs(change) > max(spread, spread_end)
    return (
        f"{key}: {statistics.fmean(first):.3f} -> {statistics.fmean(last):.3f} (mean change {change:+.3f}); "
        f"seed-to-seed spread {spread:.3f} at the start, {spread_end:.3f} at the end: the change is "
        f"{'outside' if outside else 'within'} the spread"
    )


def last_step(opts: argparse.Namespace) -> int:
    """The step training stops at: --stop-after, within the --steps schedule."""
    return min(opts.steps, opts.stop_after or opts.steps)


def plot(points: list[dict[str, float]], path: Path, title: str, verdicts: list[str]) -> None:
    """Both held-out curves, one line per seed, the verdicts (change vs seed-to-seed spread) printed under them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
    for ax, key, label in zip(
        axes, ("reward", "tool_call_success"), ("held-out reward", "held-out tool-call success"), strict=True
    ):
        for seed in sorted({p["seed"] for p in points}):
            mine = sorted((p for p in points if p["seed"] == seed), key=lambda p: p["step"])
            ax.plot([p["step"] for p in mine], [p[key] for p in mine], marker="o", label=f"seed {int(seed)}")
        ax.set_xlabel("GRPO step")
        ax.set_ylabel(label)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
    fig.suptitle(title, fontsize=9)
    fig.text(0.01, 0.01, "\n".join(verdicts), fontsize=7.5, family="monospace", va="bottom")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="a model spec (rg.model_dir)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--train-tasks", type=int, default=256)
    parser.add_argument("--eval-tasks", type=int, default=8)
    parser.add_argument("--eval-samples", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4, help="rollouts per step (per_device_train_batch_size)")
    parser.add_argument("--generations", type=int, default=4, help="rollouts per task in a GRPO group")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per turn")
    parser.add_argument("--lr", type=float, default=2e-6)  # 1e-5 broke the model's calls within 5 steps
    parser.add_argument("--stop-after", type=int, default=None, help="stop at this step of the --steps schedule")
    parser.add_argument("--png", type=Path, default=ROOT / "docs" / "images" / "learning-curve.png")
    parser.add_argument("--json", type=Path, default=None, help="where to write every evaluation point")
    parser.add_argument("--from-json", type=Path, default=None, help="redraw and print a run --json wrote; no training")
    opts = parser.parse_args()
    started = time.perf_counter()
    points: list[dict[str, float]] = []
    if opts.from_json:
        saved = json.loads(opts.from_json.read_text())
        points = saved["points"]
        for key, value in saved["options"].items():
            if key not in ("png", "json", "from_json"):
                setattr(opts, key, value)
    else:
        for seed in opts.seeds:  # each seed in a fresh process: a finished trainer's memory is not all given back
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                points += pool.submit(train_one_seed, seed, opts).result()
    title = (
        f"GRPO on {ENV} through rollgym's rollout_func: {opts.model}, {last_step(opts)} "
        f"steps x {opts.batch} rollouts,\nlr {opts.lr:g} decaying linearly over {opts.steps} steps; held out: "
        f"{opts.eval_tasks} tasks x {opts.eval_samples}"
    )
    verdicts = [spread_verdict(points, key) for key in ("reward", "tool_call_success")]
    plot(points, opts.png, title, verdicts)
    if opts.json:
        opts.json.write_text(json.dumps({"options": vars(opts), "points": points}, default=str))  # paths as text
    print(f"\n{title}\nwall {time.perf_counter() - started:.0f} s; curve: {opts.png}")
    print(f"{'seed':>4} {'step':>5} {'reward':>7} {'tool ok':>8} {'tokens':>7}")
    for p in points:
        print(
            f"{int(p['seed']):>4} {int(p['step']):>5} {p['reward']:>7.3f} {p['tool_call_success']:>8.3f} "
            f"{p['sampled_tokens']:>7.1f}"
        )
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
