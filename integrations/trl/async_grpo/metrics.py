"""What the rollout worker measures, in the shape TRL's trainer logs (`AsyncGRPOTrainer.log` drains the worker's
`metrics_queue`; `_reduce_metric` sums keys with a `total` word, keeps the extreme of `max`/`min` words, divides the
sums of `(numerator, denominator)` pairs, and averages the rest).

Pushed once per finished group: rollouts/s and the engine's busy fraction over the time since the last push (pairs,
so a logging window's figure is its own), the staleness of what was pushed, and counters since the last push
(errors by category, stale samples dropped/kept/aborted, weights that changed inside a rollout or a turn).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter

PREFIX = "rollgym/"


class WorkerMetrics:
    """Counters and rates since the last push; thread-safe (the worker's loop writes, its own push reads)."""

    def __init__(self, sink: queue.Queue) -> None:
        self.sink = sink
        self._lock = threading.Lock()
        self._counters: Counter[str] = Counter()
        self._staleness: list[int] = []
        self._rewards: list[float] = []
        self._rollouts = 0
        self._at = time.perf_counter()
        self._busy_at = 0.0

    def count(self, name: str, n: int = 1) -> None:
        """Add `n` to the counter `rollgym/<name>_total`."""
        with self._lock:
            self._counters[name] += n

    def finished(self) -> None:
        """A rollout finished (whatever became of it)."""
        with self._lock:
            self._rollouts += 1

    def pushed(self, staleness: int, reward: float) -> None:
        """A sample went to the trainer, `staleness` versions behind it, with `reward`."""
        with self._lock:
            self._staleness.append(staleness)
            self._rewards.append(reward)

    def push(self, busy_s: float, in_flight: int) -> dict[str, float | tuple[float, float]]:
        """Send what was measured since the last push to the trainer (never blocks: a full queue drops it)."""
        now = time.perf_counter()
        with self._lock:
            payload: dict[str, float | tuple[float, float]] = {
                PREFIX + "rollouts_per_s": (float(self._rollouts), now - self._at),
                PREFIX + "engine_busy_frac": (busy_s - self._busy_at, now - self._at),
                PREFIX + "in_flight": float(in_flight),
            }
            if self._staleness:
                payload[PREFIX + "staleness_mean"] = sum(self._staleness) / len(self._staleness)
                payload[PREFIX + "staleness_max"] = float(max(self._staleness))
            if self._rewards:
                payload[PREFIX + "reward_mean"] = sum(self._rewards) / len(self._rewards)
            payload.update({f"{PREFIX}{k}_total": float(v) for k, v in self._counters.items()})
            self._counters.clear()
            self._staleness.clear()
            self._rewards.clear()
            self._rollouts, self._at, self._busy_at = 0, now, busy_s
        try:
            self.sink.put_nowait(payload)
        except queue.Full:
            pass  # the trainer stopped draining: never block generation for a figure
        return payload
