"""The fault table (issue 17): every case of the fault suite (`tests/faults/catalog.py`) tried N times in
real SWE sandboxes, plus SIGINT / SIGTERM / SIGKILL to `rollgym generate` while its sandboxes start.

    .venv/bin/python benchmarks/bench_faults.py [--tries 3] [--signal-tries 2] [--only SUBSTRING]

Columns: tries; survived as designed (ended with the intended result or error category, checks held);
clear error (an error, when there is one, is a sentence, not a traceback); attribution right (agent vs
infrastructure); rollouts lost or duplicated; containers leaked; peak RSS of this process during the case
and the slowest try. Times are wall-clock on this machine, which drifts by up to 2x between runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "faults"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the rig: tests/support

from catalog import CASES, Outcome, run_case, run_signal_case


def _tool_tokenizer():
    from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
    from rollgym.tokenization.templates import CHATML_TOOLS

    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    tok.certify()
    return tok


def _row(name: str, outcomes: list[Outcome]) -> str:
    n = len(outcomes)

    def count(attr: str) -> int:
        return sum(bool(getattr(o, attr)) for o in outcomes)

    peak = max(o.peak_rss_mb for o in outcomes)
    return (
        f"| {name} | {n} | {count('survived')}/{n} | {count('clear_error')}/{n} | {count('attribution_right')}/{n} "
        f"| {sum(o.lost + o.duplicated for o in outcomes)} | {sum(o.leaked for o in outcomes)} "
        f"| {f'{peak:.0f} MB' if peak else '(subprocess)'} | {max(o.seconds for o in outcomes):.1f} s |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--signal-tries", type=int, default=2)
    parser.add_argument("--only", default="")
    args = parser.parse_args()

    from rollgym.envs.sandbox import ensure_engine
    from rollgym.envs.swe.images import ensure_task_image
    from rollgym.envs.swe.task import load_bundled_tasks

    ok, why = ensure_engine()
    if not ok:
        sys.exit(f"no Docker engine: {why}")
    task = load_bundled_tasks()[0]
    ensure_task_image(task, log=lambda _m: None)
    tok = _tool_tokenizer()
    rows, failures = [], []
    for case in CASES:
        if args.only.lower() not in case.name.lower():
            continue
        outcomes = [run_case(case, tok, task.model_dump(mode="json")) for _ in range(args.tries)]
        rows.append(_row(case.name, outcomes))
        failures += [f"{case.name}: {p}" for o in outcomes for p in o.problems]
        print(rows[-1], flush=True)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        name = f"{sig.name} to generate while sandboxes start"
        if args.signal_tries < 1 or args.only.lower() not in name.lower():
            continue
        outcomes = []
        for attempt in range(args.signal_tries):  # the first at once, the others at a drawn point up to 3 s later
            with tempfile.TemporaryDirectory() as tmp:
                outcomes.append(run_signal_case(sig, Path(tmp) / "run", seed=attempt or None))
        rows.append(_row(name, outcomes))
        failures += [f"{name}: {p}" for o in outcomes for p in o.problems]
        print(rows[-1], flush=True)
    print()
    print(
        "| fault | tries | survived as designed | clear error | attribution right | rollouts lost or duplicated "
        "| containers leaked | peak host RSS | slowest try |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if failures:
        print("\nproblems:\n" + "\n".join(f"- {f}" for f in failures))


if __name__ == "__main__":
    main()
