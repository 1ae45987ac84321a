"""Instructions per turn of the rollout loop, counted by callgrind: a figure this VM's speed swings do not move.

Wall-clock turns/s here drifts by up to 1.7x within a minute, so comparing two versions of the loop by
time needs many runs. Counting instructions is deterministic (within 0.3%): run this on each version.
The loop is `bench_loop`'s (instant engine, Calculator, 8 turns per rollout, one process); start-up and
warm-up run uninstrumented, and the count stops before interpreter shutdown.
Needs valgrind (`apt-get install -y valgrind`). About a minute.
Run: `.venv/bin/python benchmarks/loop_instructions.py [ROLLOUTS]`.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rollgym.rollouts.policy import Policy

os.environ.setdefault("HF_HUB_OFFLINE", "1")


async def _loop(rollouts: int, go: Path) -> None:
    """The measured process: warm up, wait until callgrind instruments it, run the rollouts, exit at once."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_loop import (
        CHATML_TOOLS,
        TURNS,
        CalculatorEnv,
        CountingAdd,
        Limits,
        ScriptedEngine,
        load_chat_tokenizer,
        measure,
        run_rollouts,
    )

    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    await measure(tok, 64, 64)
    tasks, engine, turns = CalculatorEnv.default_tasks(rollouts), ScriptedEngine(CountingAdd(tok)), 0

    def count(rollout) -> None:
        nonlocal turns
        turns += len(rollout.turns)

    print("READY", flush=True)
    while not go.exists():
        time.sleep(0.2)
    await run_rollouts(
        "rollgym/Calculator-v0",
        tasks,
        Policy(engine=engine, tokenizer=tok),
        n=1,
        concurrency=128,
        keep=False,
        limits=Limits(max_turns=TURNS),
        on_result=count,
    )
    print("TURNS", turns, flush=True)
    os._exit(0)  # callgrind writes its totals now; interpreter shutdown is not counted


def main(rollouts: int) -> None:
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt-get install -y valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        go = Path(tmp) / "go"
        proc = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={tmp}/callgrind.out",
                sys.executable,
                __file__,
                "--measured",
                str(rollouts),
                str(go),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        output = []
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            output.append(line)
            if line.startswith("READY"):
                subprocess.run(["callgrind_control", "--instr=on", str(proc.pid)], check=True, capture_output=True)
                go.touch()
        proc.wait()
    text = "".join(output)
    turns = re.search(r"^TURNS (\d+)", text, re.M)
    collected = re.search(r"Collected : (\d+)", text)
    if not (turns and collected):
        sys.exit(f"the measured run did not finish:\n{text[-3000:]}")
    n, instructions = int(turns.group(1)), int(collected.group(1))
    print(f"{rollouts} rollouts, {n} turns: {instructions:,} instructions, {instructions // n:,} per turn")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measured"]:
        asyncio.run(_loop(int(sys.argv[2]), Path(sys.argv[3])))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
