"""Prefix KV reuse in TransformersEngine: time per turn of a growing multi-turn conversation, reuse on vs off.

The demo's model (`qwen2.5-coder-0.5b`, fp32) answers 6 conversations at once (one batch) for 4 turns; each turn
adds the reply and a tool output, about 300 tokens, to the prompt, as a rollout re-sends its history. Both engines
share the one model and get the same prompts (built from the reuse-off replies), turn by turn, their order
alternating so the machine's drift cancels; only the ratio within one run means anything here.
Run: `.venv/bin/python benchmarks/bench_prefix_cache.py [--conversations 6] [--turns 4] [--max-tokens 32]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SYSTEM = (
    "You are a careful software engineer working in a sandboxed repository. You can call one tool, `bash`, "
    'which runs a shell command and returns its output. Call it as <tool_call>{"name": "bash", "arguments": '
    '{"command": "..."}}</tool_call>. Read the code before changing it, make the smallest change that fixes the '
    "task, run the tests after each change, and stop once they pass. "
) * 10
TASKS = [
    "The function `parse_duration` in utils/time.py rejects '1h30m'. Make it accept combined units.",
    "`Cache.get` in store/cache.py returns expired entries. Fix the expiry check.",
    "The CLI flag --verbose is ignored by the `sync` command. Wire it through.",
    "`slugify` in text/slug.py keeps trailing dashes. Strip them.",
    "The JSON exporter writes NaN, which is not valid JSON. Write null instead.",
    "`retry` in net/retry.py sleeps once more than asked. Fix the off-by-one.",
]


def tool_output(conversation: int, turn: int) -> str:
    """About 250 tokens of a shell's output, different for every conversation and turn."""
    lines = [
        f"src/module_{conversation}_{turn}_{i}.py:{10 * i + turn}: def handler_{i}(request, retries={i}):"
        for i in range(11)
    ]
    return "\n".join(lines)


def bridge(tokenizer, last_id: int | None, eos: frozenset[int], text: str) -> list[int]:
    """The ids after a reply: close it (unless its stop id did), the tool's answer, the next assistant header."""
    close = "\n" if last_id in eos else "<|im_end|>\n"
    body = f"{close}<|im_start|>user\n<tool_response>\n{text}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    return tokenizer(body)["input_ids"]


async def timed_turn(engine, prompts, sampling):
    start = time.perf_counter()
    gens = await asyncio.gather(*(engine.generate(p, sampling) for p in prompts))
    return time.perf_counter() - start, gens


async def run(conversations: int, turns: int, max_tokens: int) -> None:
    import torch
    from transformers import AutoTokenizer

    import rollgym as rg
    from rollgym.engines import SamplingParams
    from rollgym.engines.default_model import DEMO_MODEL
    from rollgym.engines.transformers_engine import TransformersEngine

    on = TransformersEngine(DEMO_MODEL, max_batch_size=conversations)
    off = TransformersEngine(on._model, max_batch_size=conversations, prefix_cache_tokens=0)
    tokenizer = AutoTokenizer.from_pretrained(str(rg.model_dir(DEMO_MODEL)))
    sampling = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    prompts = [
        tokenizer(
            f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{TASKS[i % len(TASKS)]} (#{i})"
            "<|im_end|>\n<|im_start|>assistant\n"
        )["input_ids"]
        for i in range(conversations)
    ]
    await off.generate(prompts[0][:16], SamplingParams(max_tokens=2))  # warm-up (the store stays empty)
    print(
        f"TransformersEngine, {DEMO_MODEL} fp32, CPU threads={torch.get_num_threads()}, {conversations} conversations "
        f"in one batch, {turns} turns, greedy, max_tokens={max_tokens}"
    )
    print(f"{'turn':>4} {'prompt ids':>10} {'reused':>7} {'off s':>8} {'on s':>8} {'off/on':>7} {'same ids':>8}")
    total_off = total_on = 0.0
    for turn in range(turns):
        if turn % 2 == 0:
            t_off, g_off = await timed_turn(off, prompts, sampling)
            t_on, g_on = await timed_turn(on, prompts, sampling)
        else:
            t_on, g_on = await timed_turn(on, prompts, sampling)
            t_off, g_off = await timed_turn(off, prompts, sampling)
        total_off, total_on = total_off + t_off, total_on + t_on
        same = sum(a.completion_ids == b.completion_ids for a, b in zip(g_off, g_on, strict=True))
        mean_prompt = statistics.fmean(len(p) for p in prompts)
        reused = statistics.fmean(g.timings.cached_tokens for g in g_on)
        print(
            f"{turn + 1:>4} {mean_prompt:>10.0f} {reused:>7.0f} {t_off:>8.1f} {t_on:>8.1f} {t_off / t_on:>6.2f}x "
            f"{same:>5}/{conversations}"
        )
        prompts = [
            p + g.completion_ids + bridge(tokenizer, g.completion_ids[-1], on.eos_token_ids, tool_output(i, turn))
            for i, (p, g) in enumerate(zip(prompts, g_off, strict=True))
        ]
    print(f"{'all':>4} {'':>10} {'':>7} {total_off:>8.1f} {total_on:>8.1f} {total_off / total_on:>6.2f}x")
    store = on.prefix_cache
    if store is not None:
        print(f"store: {len(store)} entries, {store.tokens} tokens (bound {store.max_tokens})")
    await on.aclose()
    await off.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(run(args.conversations, args.turns, args.max_tokens))


if __name__ == "__main__":
    main()
