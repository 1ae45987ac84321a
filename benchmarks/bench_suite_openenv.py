"""An OpenEnv server through rollgym vs through OpenEnv's own client, side by side: turns/s and CPU per turn.

The server is the tests' guessing game (tests/envs/suites/openenv/servers/guess_env.py, written with openenv 0.10.0),
served by uvicorn from the venv `.ci/openenv-up` builds. The same episodes (seeds 0..N-1, bisection: 1-6 guesses each)
are played (a) by rollgym: `run_rollouts("openenv/env-v0", url=...)` with the instant `ScriptedEngine` (SmolLM2's
tokenizer and template: every turn rendered, tokenized, parsed, its tool call sent as one `step`), and (b) by
OpenEnv's `GenericEnvClient` in a process of its own, the guesses computed in Python. Rounds alternate (a) and (b),
as this VM's speed drifts up to 2x; the server's CPU is read from /proc for each. Run:
`.venv/bin/python benchmarks/bench_suite_openenv.py [--episodes 200] [--concurrency 8] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rollgym.engines.scripted import ScriptedEngine
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "envs" / "suites" / "openenv" / "servers"
OPENENV_PYTHON = Path(os.environ.get("ROLLGYM_CACHE", Path.home() / ".cache" / "rollgym")) / "openenv/venv/bin/python"
_ANSWER = re.compile(r"<tool_response>\n?(higher|lower)\n?</tool_response>")
_GUESS = re.compile(r'"guess": (\d+)')


def serve(port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [str(OPENENV_PYTHON), "-m", "uvicorn", "guess_env:app", "--port", str(port), "--log-level", "warning"],
        cwd=SERVERS,
    )
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            return server
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the guessing game's server did not start")


def server_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bisect:
    """The instant policy: bisection on the episode's "higher"/"lower" answers, read from the prompt's tail."""

    def __init__(self, tok) -> None:
        self.tok = tok

    def __call__(self, prompt, sampling):
        episode = self.tok.decode(prompt).split("<|im_start|>assistant", 1)
        low, high = 1, 100
        if len(episode) == 2:
            for guess, answer in zip(_GUESS.findall(episode[1]), _ANSWER.findall(episode[1]), strict=False):
                low, high = (int(guess) + 1, high) if answer == "higher" else (low, int(guess) - 1)
        body = json.dumps({"name": "act", "arguments": {"guess": (low + high) // 2}})
        return self.tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tok.end_of_turn_id]


def through_rollgym(url: str, tok, episodes: int, concurrency: int) -> dict:
    policy = Policy(engine=ScriptedEngine(Bisect(tok)), tokenizer=tok)
    tasks = [{"seed": s} for s in range(episodes)]
    wall, cpu = time.perf_counter(), time.process_time()
    rollouts = asyncio.run(
        run_rollouts(
            "openenv/env-v0", tasks, policy, concurrency=concurrency, limits=Limits(max_turns=10),
            env_kwargs={"url": url, "system_prompt": None},
        )
    )  # fmt: skip
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r.error is None and r.reward_components["server_done"] == 1.0 for r in rollouts)
    return {"turns": sum(len(r.turns) for r in rollouts), "wall_s": wall, "cpu_s": cpu}


def through_openenv_client(url: str, episodes: int, concurrency: int) -> dict:
    script = Path(__file__).with_name("openenv_direct_client.py")
    done = subprocess.run(
        [str(OPENENV_PYTHON), str(script), url, str(episodes), str(concurrency)], capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not OPENENV_PYTHON.exists():
        raise SystemExit(f"no openenv venv at {OPENENV_PYTHON}: run `bash .ci/openenv-up`")
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    port = 18700 + os.getpid() % 200
    server = serve(port)
    url = f"http://127.0.0.1:{port}"
    rows: dict[str, list[dict]] = {"rollgym": [], "openenv client": []}
    try:
        through_rollgym(url, tok, 8, 4)  # warm: the tokenizer's caches, the server's first sessions
        for _ in range(args.rounds):
            for name in rows:
                before = server_cpu_s(server.pid)
                if name == "rollgym":
                    row = through_rollgym(url, tok, args.episodes, args.concurrency)
                else:
                    row = through_openenv_client(url, args.episodes, args.concurrency)
                row["server_cpu_s"] = server_cpu_s(server.pid) - before
                rows[name].append(row)
    finally:
        server.terminate()
        server.wait()
    print(f"{args.episodes} episodes x {args.rounds} rounds, concurrency {args.concurrency}; medians:")
    print(f"{'':<16}{'turns/s':>10}{'client CPU/turn':>18}{'server CPU/turn':>18}")
    medians = {}
    for name, got in rows.items():
        rate = statistics.median(r["turns"] / r["wall_s"] for r in got)
        client = statistics.median(r["cpu_s"] / r["turns"] for r in got) * 1e3
        served = statistics.median(r["server_cpu_s"] / r["turns"] for r in got) * 1e3
        medians[name] = (rate, client, served)
        print(f"{name:<16}{rate:>10.0f}{client:>15.2f} ms{served:>15.2f} ms")
    (a_rate, a_cpu, _), (b_rate, b_cpu, _) = medians["rollgym"], medians["openenv client"]
    print(f"rollgym / openenv client: {a_rate / b_rate:.2f}x the turns/s, {a_cpu / b_cpu:.2f}x the client CPU per turn")


if __name__ == "__main__":
    main()
