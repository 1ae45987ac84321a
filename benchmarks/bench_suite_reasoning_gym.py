"""reasoning-gym inside rollgym vs reasoning-gym's own API, side by side in one run.

The same work both ways, per family: each row's gold answer is scored by reasoning-gym's `score_answer`. rollgym:
`run_rollouts` on `reasoning_gym/<family>-v0` with an instant `ScriptedEngine` that replies `<answer>gold</answer>`
(row generation, the prompt's tokenization, the loop, the records included; one turn per episode). reasoning-gym:
`create_dataset(family, seed, size)`, each entry built and `score_answer(extract_answer(reply), entry)` called, with no
model and no tokenizer. Runs in the order rollgym, reasoning-gym, reasoning-gym, rollgym, so the VM's drift cancels.
Run: `.venv/bin/python benchmarks/bench_suite_reasoning_gym.py [--rows N] [--concurrency C]` (rollgym[reasoning-gym]).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

FAMILIES = ("basic_arithmetic", "word_sorting", "caesar_cipher", "knights_knaves", "gcd", "maze")
SEED = 7


def gold_answers(family: str, rows: int) -> dict[str, str]:
    """Each question of the family's first `rows` rows (seed SEED) with its gold answer."""
    import reasoning_gym

    return {e["question"]: str(e["answer"]) for e in reasoning_gym.create_dataset(family, seed=SEED, size=rows)}


async def through_rollgym(family: str, rows: int, tok, gold: dict[str, str], concurrency: int) -> tuple[float, float]:
    """(wall s, CPU s) of one episode per row through rollgym's loop; every episode must score 1."""

    def reply(prompt_ids, sampling):
        question = tok.decode(prompt_ids).split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        return tok.encode(f"<answer>{gold[question]}</answer>") + [tok.end_of_turn_id]

    env_id = f"reasoning_gym/{family}-v0"
    tasks = rg.make(env_id).unwrapped.default_tasks(rows, seed=SEED)
    policy = rg.Policy(engine=ScriptedEngine(reply), tokenizer=tok)
    wall, cpu = time.perf_counter(), time.process_time()
    rollouts = await rg.run_rollouts(env_id, tasks, policy, concurrency=concurrency)
    spent = time.perf_counter() - wall, time.process_time() - cpu
    assert [r.reward for r in rollouts] == [1.0] * rows, f"{family}: a gold answer did not score 1"
    return spent


def through_reasoning_gym(family: str, rows: int) -> tuple[float, float]:
    """(wall s, CPU s) of the same rows built and scored by reasoning-gym alone."""
    import reasoning_gym
    from reasoning_gym.utils import extract_answer

    wall, cpu = time.perf_counter(), time.process_time()
    dataset = reasoning_gym.create_dataset(family, seed=SEED, size=rows)
    scores = [dataset.score_answer(extract_answer(f"<answer>{e['answer']}</answer>"), e) for e in dataset]
    spent = time.perf_counter() - wall, time.process_time() - cpu
    assert scores == [1.0] * rows, f"{family}: reasoning-gym scored a gold answer below 1"
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200, help="episodes per family and side")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    print(f"{'family':<18} {'side':<14} {'episodes/s':>11} {'CPU/episode':>12}")
    totals = {"rollgym": [0.0, 0.0], "reasoning-gym": [0.0, 0.0]}
    for family in FAMILIES:
        gold = gold_answers(family, args.rows)
        asyncio.run(through_rollgym(family, min(args.rows, 8), tok, gold, args.concurrency))  # warm: imports, caches
        for side in ("rollgym", "reasoning-gym", "reasoning-gym", "rollgym"):
            if side == "rollgym":
                wall, cpu = asyncio.run(through_rollgym(family, args.rows, tok, gold, args.concurrency))
            else:
                wall, cpu = through_reasoning_gym(family, args.rows)
            totals[side][0] += wall
            totals[side][1] += cpu
            print(f"{family:<18} {side:<14} {args.rows / wall:>11.1f} {cpu / args.rows * 1e3:>9.3f} ms", flush=True)
    episodes = 2 * args.rows * len(FAMILIES)
    ours, theirs = (totals[s][1] / episodes * 1e3 for s in ("rollgym", "reasoning-gym"))
    print(
        f"all families: CPU per episode (one turn) rollgym {ours:.3f} ms, reasoning-gym alone {theirs:.3f} ms: "
        f"rollgym's loop, tokenizer and records add {ours - theirs:.3f} ms an episode ({ours / theirs:.1f}x)"
    )


if __name__ == "__main__":
    main()
