"""How long `import rollgym` takes in a fresh interpreter (target < 0.3 s, no torch), beside a bare
interpreter start measured in the same run (this VM's speed drifts, so compare the two).

    .venv/bin/python benchmarks/bench_import.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys

PROBE = "import sys, time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t, 'torch' in sys.modules)"


def measure(stmt: str, runs: int) -> tuple[float, bool]:
    times, torch = [], False
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(stmt=stmt)], capture_output=True, text=True, check=True
        )
        seconds, loaded = out.stdout.split()
        times.append(float(seconds))
        torch = torch or loaded == "True"
    return statistics.median(times), torch


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(f"{'statement':<52} {'median ms':>9} {'torch':>6}")
    for stmt in (
        "import json",
        "import rollgym",
        "import rollgym as rg; rg.Policy; rg.make; rg.Limits",
        "import rollgym.envs",
        "import rollgym.tokenization",
    ):
        median, torch = measure(stmt, runs)
        print(f"{stmt:<52} {median * 1000:>9.1f} {str(torch):>6}")


if __name__ == "__main__":
    main()
