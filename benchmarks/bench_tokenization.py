"""Tokenization benchmark: one turn's bridge vs a full re-render, at turn 8 and turn 128, for every model family.

Each family renders a tool-calling conversation (a bash tool, a tool output of about 250 characters per turn) in its
own format, with the vocabulary its tests use (`rollgym.cli.vocabularies`). Target: a bridge costs the same
at turn 128 as at turn 8 (ratio <= 1.5) while a full re-render grows with the history. Each timed bridge carries a
tool output never seen before, so no cache answers for the tokenizer. The Qwen3 row also times bridges without
render recipes. All figures come from one run, families interleaved round by round (the machine's speed drifts).
Run: `.venv/bin/python benchmarks/bench_tokenization.py [--family NAME ...]`.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rollgym.cli.vocabularies import family_tokenizer
from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.families import FAMILIES, family

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]
_UNIQUE = itertools.count()  # every timed bridge gets a tool output the tokenizer's caches have never seen
OUTPUT = "total 48\ndrwxr-xr-x  5 user user 4096 Nov 22 04:33 src\n-rw-r--r--  1 user user  812 README.md\n" * 3


def call_id(fmt: str | None, i: int) -> str:
    return (fmt or "call{index:05d}").format(index=i, name="bash")


def turn(i: int, fmt: str | None) -> tuple[dict, dict]:
    call = {
        "id": call_id(fmt, i),
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": f"ls -la src/{i}"})},
    }
    return (
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id(fmt, i), "name": "bash", "content": OUTPUT},
    )


def written(tok: ChatTokenizer, i: int, fmt: str | None) -> list[int]:
    """Turn i as the family's model writes it (its reference's own rendering of that turn)."""
    call, result = turn(i, fmt)
    return tok.ids_of(tok.canonical_completion([{"role": "user", "content": "x"}, call, result], 1, TOOLS, {}))


def measure(tok: ChatTokenizer, fmt: str | None, n_turns: int, reps: int) -> tuple[float, float]:
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Explore the repo."},
    ]
    traj = tok.start(messages, TOOLS)
    for i in range(n_turns):
        call, result = turn(i, fmt)
        traj.add_completion(written(tok, i, fmt), None, "stop")
        traj.messages.append(call)
        if i + 1 < n_turns:
            traj.add_messages([result])
        messages += [call, result]
    fresh = [[dict(messages[-1], content=f"{OUTPUT}run {next(_UNIQUE)}")] for _ in range(reps)]
    bridge_s, render_s = [], []
    gc.collect()
    gc.disable()  # as timeit does: collector pauses are not the code's cost
    for rep in range(reps):  # bridges first, then re-renders: interleaving lets one evict the other's caches
        saved = (len(traj.completion_ids), len(traj.segments), len(traj.messages))
        t0 = time.perf_counter()
        traj.add_messages(fresh[rep])
        bridge_s.append(time.perf_counter() - t0)
        del traj.completion_ids[saved[0] :], traj.logprobs[saved[0] :], traj.env_mask[saved[0] :]
        del traj.segments[saved[1] :], traj.messages[saved[2] :]
    for _ in range(reps):
        t0 = time.perf_counter()
        tok.prompt_ids(messages, TOOLS)
        render_s.append(time.perf_counter() - t0)
    gc.enable()
    return statistics.median(bridge_s), statistics.median(render_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", action="append", help="only these families (repeatable); default: all")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    names = args.family or [f.name for f in FAMILIES]
    toks = {name: family_tokenizer(name) for name in names}
    if "qwen3" in toks:  # the same pair with every bridge rendered in full
        toks["qwen3 (no recipes)"] = ChatTokenizer(
            toks["qwen3"].hf, chat_template=toks["qwen3"].template, recipes=False
        )
    fmts = {name: family(name.split(" ")[0]).call_id_format for name in toks}
    for name, tok in toks.items():
        measure(tok, fmts[name], 4, 3)  # warm up template compilation and caches
    best: dict[tuple[str, int], tuple[float, float]] = {}
    for _ in range(args.rounds):  # interleaved: every family in every round, best of the rounds
        for name, tok in toks.items():
            for n in (8, 128):
                b, r = measure(tok, fmts[name], n, args.reps)
                old = best.get((name, n))
                best[(name, n)] = (min(b, old[0]), min(r, old[1])) if old else (b, r)
    header = f"{'family':<24} | {'bridge t8 (ms)':>14} | {'bridge t128 (ms)':>16} | {'t128/t8':>7} | {'re-render t128 (ms)':>19} | {'re-render/bridge t128':>21}"
    print(header + "\n" + "-" * len(header))
    missed = []
    for name in toks:
        (b8, _), (b128, r128) = best[(name, 8)], best[(name, 128)]
        ratio = b128 / b8
        if ratio > 1.5:
            missed.append(name)
        print(
            f"{name:<24} | {b8 * 1e3:>14.3f} | {b128 * 1e3:>16.3f} | {ratio:>7.2f} | {r128 * 1e3:>19.2f} | {r128 / b128:>20.1f}x"
        )
    print(
        f"\nbridge cost turn 128 / turn 8 <= 1.5: {len(toks) - len(missed)} of {len(toks)} ({', '.join(missed) or 'all met'})"
    )
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
