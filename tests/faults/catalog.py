"""The fault catalog shared by `tests/faults/test_catalog.py` (each case must hold) and
`benchmarks/bench_faults.py` (each case tried N times, as a table).

A case is an agent misbehaving inside a real SWE sandbox (a scripted policy sends the tool calls), or the
infrastructure failing under it (a harness thread kills a container). Every case runs as a batch of one
faulty rollout beside clean ones, and its `Outcome` records what the issue asks of each fault: bounded
time, a clear result or error category, the right attribution (agent vs infrastructure), no rollout lost
or duplicated, no container left, the host process's memory bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from support.interrupt import interruptible

from rollgym.engines import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.sandbox import RUN_ID, list_containers, prune
from rollgym.envs.sandbox.daemon import docker_client
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.output import is_infra_failure, read_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import Rollout

#: appended to the bundled task's package (inflection, load_bundled_tasks()[0]) by the mid-grading case
SLOW_IMPORT = "\\nimport time\\ntime.sleep(120)\\n"
FAULTY_SEED = 0  # sample 0 of a batch with base seed 0 gets seed 0 (rollgym.rollouts.jobs.sample_seed)
HOST_MEMORY_BOUND_MB = 600  # growth of this process's RSS a fault may cause (the 2 GiB file case was 8.6 GB)


@dataclass
class Case:
    """One fault: the faulty rollout's tool calls (a list of (name, arguments); `submit` is appended), what
    it must end as, and optionally a harness-side injection run in a thread with the case's run id."""

    name: str
    calls: list[tuple[str, dict]]
    category: str | None = None  # the faulty rollout's error category; None: no error, the episode went on
    infra: bool = False  # whether that is an infrastructure failure (retried) rather than the agent's result
    check: Callable[[Rollout], str | None] | None = None  # more to hold of the faulty rollout: a problem or None
    sandbox: dict = field(default_factory=dict)
    inject: Callable[[str], None] | None = None
    clean: int = 1  # clean rollouts beside the faulty one
    max_s: float = 240.0
    slow: bool = False


@dataclass
class Outcome:
    """What one try of a case did."""

    case: str
    seconds: float
    survived: bool  # ended as designed (category and checks)
    clear_error: bool  # an error, when there is one, says what happened in a sentence
    attribution_right: bool
    lost: int
    duplicated: int
    leaked: int
    peak_rss_mb: float
    problems: list[str]


def _result(rollout: Rollout, call: int) -> str:
    """The tool result of the faulty rollout's `call`-th tool call."""
    calls = [c for t in rollout.turns for c in t.tool_calls]
    return calls[call].result if call < len(calls) else ""


def _expect(call: int, *needles: str, absent: tuple[str, ...] = ()) -> Callable[[Rollout], str | None]:
    def check(rollout: Rollout) -> str | None:
        text = _result(rollout, call)
        missing = [n for n in needles if n not in text]
        present = [a for a in absent if a in text]
        if missing or present:
            return f"tool result {call}: missing {missing}, unexpected {present}: {text[:300]!r}"
        return None

    return check


def _all(*checks: Callable[[Rollout], str | None]) -> Callable[[Rollout], str | None]:
    return lambda r: next((p for c in checks if (p := c(r))), None)


def _refused_before_grading(rollout: Rollout) -> str | None:
    """The change was refused as the agent's failure (`patch_failed`), not graded as infrastructure."""
    c = rollout.reward_components
    ok = c.get("patch_applied") == 0.0 and c.get("infra_failure") == 0.0 and rollout.reward == 0.0
    return None if ok else f"reward components {c}, expected a refused patch (patch_applied 0, infra_failure 0)"


def _bounded_output(limit: int) -> Callable[[Rollout], str | None]:
    return lambda r: None if len(_result(r, 0)) <= limit else f"tool result of {len(_result(r, 0)):,} chars"


def _kill_when(run_id: str, process: str, label_run_id: str | None = None, delay_s: float = 1.0) -> None:
    """Kill the container of this case that runs `process` (seen with `docker top`), once it does."""
    client = docker_client()
    deadline = time.time() + 180
    while time.time() < deadline:
        for c in client.containers.list(filters={"label": f"rollgym.run_id={label_run_id or run_id}"}):
            try:
                if any(process in " ".join(p) for p in c.top().get("Processes") or []):
                    time.sleep(delay_s)
                    c.kill()
                    return
            except Exception:  # noqa: BLE001 - it went away meanwhile
                pass
        time.sleep(0.1)


CASES = [
    Case(
        "fork bomb",
        [("bash", {"command": ":(){ :|:& };:", "timeout": 10}), ("bash", {"command": "echo alive"})],
        check=_expect(1, "alive"),
    ),
    Case(
        "4 GiB memory hog",
        [("bash", {"command": "python3 -c 'b = bytearray(4 << 30); print(len(b))'"})],
        check=_expect(0, "exit code: 137"),
    ),
    Case(
        "100 MB output flood",
        [("bash", {"command": "head -c 100000000 /dev/urandom | base64"})],
        check=_bounded_output(60_000),
    ),
    Case(
        "command ignoring SIGTERM",
        [("bash", {"command": "trap '' TERM; sleep 1000", "timeout": 5})],
        check=_expect(0, "timed out"),
    ),
    Case(
        "setsid child outliving its command",
        [
            ("bash", {"command": "setsid sleep 1001 & sleep 1000", "timeout": 3}),
            ("bash", {"command": "ps -eo args | grep -c '^sleep 100[01]' || true"}),
        ],
        check=_expect(1, "0"),
    ),
    Case(
        "network escape",
        [
            (
                "bash",
                {
                    "command": "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 3)\" "
                    "2>&1 | tail -1; getent hosts pypi.org || echo no-dns"
                },
            )
        ],
        check=_expect(0, "no-dns", absent=("Connected",)),
    ),
    Case(
        "capability and host probe",
        [
            (
                "bash",
                {
                    "command": "ls /var/run/docker.sock 2>&1; mount -t tmpfs x /mnt 2>&1; "
                    "ip link set lo down 2>&1; id -u"
                },
            )
        ],
        check=_expect(0, "No such file", "1000"),
    ),
    Case(
        "kill -9 -1",
        [("bash", {"command": "kill -9 -1"}), ("bash", {"command": "echo back"})],
        check=_expect(1, "back"),
    ),
    Case(
        "2 GiB file viewed with the editor",
        [
            ("bash", {"command": "truncate -s 2G big.txt"}),
            ("str_replace_editor", {"command": "view", "path": "/testbed/big.txt"}),
        ],
        check=_all(
            _expect(1, "big.txt"), lambda r: None if len(_result(r, 1)) <= 70_000 else "editor output unbounded"
        ),
    ),
    Case(
        "editor on a FIFO",
        [("bash", {"command": "mkfifo pipe"}), ("str_replace_editor", {"command": "view", "path": "/testbed/pipe"})],
        check=_expect(1, "not a regular file"),
    ),
    Case(
        "1 GiB file submitted",
        [("bash", {"command": "head -c 1G /dev/urandom > blob.bin"})],
        check=_refused_before_grading,
        slow=True,
    ),
    Case(
        "disk filled past the budget",
        [("bash", {"command": "head -c 400M /dev/zero > /tmp/fill"})],
        category="disk",
        sandbox={"disk_limit": "128m"},
    ),
    Case(
        "container killed mid-rollout",
        [("bash", {"command": "sleep 20; echo done"})],
        category="sandbox",
        infra=True,
        inject=lambda run_id: _kill_when(run_id, "sleep 20"),
    ),
    Case(
        "container killed mid-grading",
        # The change makes the graded tests' import take a minute, so the kill lands while they run: the bundled
        # task's tests alone can finish within the injector's delay, and a kill after the verdict is read (or after
        # the grading container is gone) is no fault of grading at all.
        [("bash", {"command": f"printf '{SLOW_IMPORT}' >> inflection/__init__.py"})],
        category="sandbox",
        infra=True,
        clean=0,
        inject=lambda run_id: _kill_when(run_id, "pytest", label_run_id=RUN_ID, delay_s=0.3),
    ),
]


def _policy(tool_tok, calls: list[tuple[str, dict]]) -> Policy:
    """Sample 0 makes the case's calls then submits; every other sample submits at once."""

    def say(name: str, args: dict) -> list[int]:
        body = json.dumps({"name": name, "arguments": args})
        return tool_tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [tool_tok.end_of_turn_id]

    def reply(prompt: list[int], sampling) -> list[int]:
        turn = tool_tok.hf.decode(prompt).count("<|im_start|>assistant") - 1
        faulty = sampling.seed == FAULTY_SEED + turn  # the loop adds the turn index to the rollout's seed
        script = calls + [("submit", {})] if faulty else [("submit", {})]
        return say(*script[min(turn, len(script) - 1)])

    return Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)


class _PeakRSS:
    """The largest resident size of this process while the block runs, sampled every 20 ms."""

    def __enter__(self) -> _PeakRSS:
        self.start = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _rss(self) -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_case(case: Case, tool_tok, task: dict) -> Outcome:
    """Run the case once: one faulty rollout and `case.clean` clean ones of `task`, in one batch."""
    run_id = f"fault-{uuid.uuid4().hex[:8]}"
    before = set(list_containers(run_id=RUN_ID))
    injector = threading.Thread(target=case.inject, args=(run_id,), daemon=True) if case.inject else None
    n = 1 + case.clean
    t0 = time.monotonic()
    with _PeakRSS() as rss:
        if injector:
            injector.start()
        rollouts = asyncio.run(
            run_rollouts(
                "rollgym/SWE-v0",
                [task],
                _policy(tool_tok, case.calls),
                n=n,
                concurrency=n,
                limits=Limits(max_turns=len(case.calls) + 2, max_model_len=8192, timeout_s=case.max_s),
                sampling=SamplingParams(seed=0),
                env_kwargs={"sandbox": {"run_id": run_id, **case.sandbox}},
            )
        )
    seconds = time.monotonic() - t0
    if injector:
        injector.join(timeout=5)
    time.sleep(0.5)  # removals the daemon is finishing
    leaked = len(list_containers(run_id=run_id)) + len(set(list_containers(run_id=RUN_ID)) - before)
    problems = []
    keys = [r.sample_index for r in rollouts]
    lost, duplicated = len(set(range(n)) - set(keys)), len(keys) - len(set(keys))
    faulty = next((r for r in rollouts if r.sample_index == 0), None)
    survived = attribution = clear = False
    if faulty is not None:
        category = faulty.error.category if faulty.error else None
        if category != case.category:
            problems.append(
                f"category {category!r} ({faulty.error.message[:200] if faulty.error else faulty.stop_reason}), "
                f"expected {case.category!r}"
            )
        problem = case.check(faulty) if case.check else None
        if problem:
            problems.append(problem)
        survived = category == case.category and problem is None
        attribution = is_infra_failure(faulty) == case.infra
        clear = faulty.error is None or (len(faulty.error.message) > 20 and "Traceback" not in faulty.error.message)
    for r in rollouts:
        if r.sample_index != 0 and r.error is not None:
            problems.append(f"a clean rollout failed: {r.error.category}: {r.error.message[:200]}")
    if seconds > case.max_s + 60:
        problems.append(f"took {seconds:.0f} s")
    if leaked:
        problems.append(f"{leaked} container(s) left")
    growth = rss.peak - rss.start
    if growth > HOST_MEMORY_BOUND_MB:
        problems.append(f"host process grew by {growth:.0f} MB")
    return Outcome(
        case=case.name,
        seconds=seconds,
        survived=survived and not problems,
        clear_error=clear,
        attribution_right=attribution,
        lost=lost,
        duplicated=duplicated,
        leaked=leaked,
        peak_rss_mb=rss.peak,
        problems=problems,
    )


# --- signals to `rollgym generate` while SWE sandboxes start ------------------------------------------------
GENERATE = [
    sys.executable,
    "-m",
    "rollgym",
    "generate",
    "--env",
    "rollgym/SWE-v0",
    "--tasks",
    "bundled",
    "--num-tasks",
    "3",
    "--n",
    "2",
    "--concurrency",
    "6",
    "--max-turns",
    "2",
    "--max-tokens",
    "16",
]
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}


def run_signal_case(sig: signal.Signals, out: Path, seed: int | None = None, extra: tuple[str, ...] = ()) -> Outcome:
    """`rollgym generate` (3 SWE tasks x 2, the real SmolLM2) gets `sig` once its first container exists, while
    the others are being created (or up to 3 s later, at a point drawn from `seed`); then `--resume`
    completes the run. SIGKILL leaves orphans no process can
    remove: `prune` must find them (it runs before the count). `extra`: more options for both runs
    (e.g. `--workers 2`: the sandboxes are then started by Ray actors, which must release them too)."""
    run_id = f"sig-{sig.name.lower()}-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ROLLGYM_RUN_ID": run_id}
    problems: list[str] = []
    proc = subprocess.Popen(
        interruptible(GENERATE + [*extra, "--out", str(out)]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not list_containers(run_id=run_id):
        time.sleep(0.05)
    if not list_containers(run_id=run_id):
        problems.append("the run started no sandbox")
    time.sleep(random.Random(seed).uniform(0, 3) if seed is not None else 0)  # during creation, or a bit later
    t0 = time.monotonic()
    proc.send_signal(sig)
    output = proc.communicate(timeout=180)[0].decode()
    seconds = time.monotonic() - t0
    if proc.returncode != SIGNAL_EXIT[sig]:
        problems.append(f"exit {proc.returncode}, expected {SIGNAL_EXIT[sig]}: {output[-500:]}")
    if sig == signal.SIGKILL:
        time.sleep(5)  # creations the daemon had accepted finish
        prune()
    elif "--resume" not in output:
        problems.append("no word on how to resume")
    leaked = len(list_containers(run_id=run_id))
    path = out / "rollouts.jsonl"
    before = [r.id for r in read_rollouts(path)] if path.exists() else []
    done = subprocess.run(
        GENERATE + [*extra, "--out", str(out), "--resume"], capture_output=True, text=True, timeout=900, env=env
    )
    if done.returncode != 0:
        problems.append(f"resume exit {done.returncode}: {done.stderr[-500:]}")
    rows = list(read_rollouts(path)) if path.exists() else []
    keys = [r.key for r in rows]
    if [r.id for r in rows][: len(before)] != before:
        problems.append("resume changed earlier lines")
    leaked += len(list_containers(run_id=run_id))
    if leaked:
        problems.append(f"{leaked} container(s) left")
    return Outcome(
        case=f"{sig.name} to generate{' ' + ' '.join(extra) if extra else ''} while sandboxes start",
        seconds=seconds,
        survived=not problems,
        clear_error=sig == signal.SIGKILL or "--resume" in output,
        attribution_right=True,
        lost=6 - len(set(keys)),
        duplicated=len(keys) - len(set(keys)),
        leaked=leaked,
        peak_rss_mb=0.0,
        problems=problems,
    )
