"""The workload through rollgym: `run_rollouts` on the Calculator with a token-in/token-out `VLLMServerEngine`
(what a trainer runs against vLLM), one `Policy` whose tokenizer is SmolLM2's with the ChatML + Hermes template."""

from __future__ import annotations

import asyncio
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _measure import Clock, Counts, arguments, load_workload, report

from rollgym import Limits, Policy, SamplingParams, run_rollouts
from rollgym.engines.vllm_server import VLLMServerEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS
from rollgym.version import __version__


class NudgingCalculator(CalculatorEnv):
    """The workload's rule: a reply without a tool call gets the nudge, so every episode runs its turn budget."""

    nudge = ""

    async def on_text_reply(self, message: dict):
        return [{"role": "user", "content": self.nudge}], False


async def batch(policy: Policy, work: dict, tasks: list[dict], concurrency: int, counts: Counts) -> None:
    def on_result(r) -> None:
        counts.turns += len(r.turns)
        counts.sampled += sum(len(t.completion_ids) for t in r.turns)
        counts.episodes.append(r.task_id)
        if r.error is not None:
            counts.errors += 1
            counts.first_error = counts.first_error or f"{r.error.type}: {r.error.message}"[:300]

    s = work["sampling"]
    await run_rollouts(
        NudgingCalculator,
        tasks,
        policy,
        n=1,
        concurrency=concurrency,
        keep=False,
        on_result=on_result,
        limits=Limits(max_turns=work["max_turns"], max_tokens_per_turn=s["max_tokens"]),
        sampling=SamplingParams(temperature=s["temperature"], top_p=s["top_p"], seed=s["seed"]),
    )


async def main() -> None:
    args = arguments()
    work = load_workload(args.workload)
    NudgingCalculator.nudge = work["nudge"]
    # A turn cut by the token budget is closed (its end-of-turn token added, masked) and the episode goes on, as the
    # peers' loops do; rollgym's default ends the episode there.
    tokenizer = load_chat_tokenizer(work["tokenizer"], CHATML_TOOLS, truncation="close")
    engine = VLLMServerEngine(args.base_url, max_concurrency=max(args.concurrency, 1), max_retries=0)
    policy = Policy(engine=engine, tokenizer=tokenizer)
    tasks = work["tasks"]
    await batch(policy, work, tasks[: args.warmup], min(args.concurrency, args.warmup), Counts())
    counts = Counts()
    with Clock() as clock:
        await batch(policy, work, tasks[: args.episodes], args.concurrency, counts)
    await engine.aclose()
    report("rollgym", __version__, counts, clock.wall, clock.cpu, clock.base_kib, clock.peak_kib, args.concurrency)


if __name__ == "__main__":
    asyncio.run(main())
