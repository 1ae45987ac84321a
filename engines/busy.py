"""`BusyClock`: how long an engine had at least one request in flight (its busy time; busy / wall = how much of the
run the engine was working, the figure asynchronous RL raises)."""

from __future__ import annotations

import threading
import time


class BusyClock:
    """Counts wall-clock seconds during which at least one request was in flight; `with clock:` around each one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._since = 0.0
        self._busy = 0.0

    def __enter__(self) -> BusyClock:
        with self._lock:
            if self._in_flight == 0:
                self._since = time.perf_counter()
            self._in_flight += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._busy += time.perf_counter() - self._since

    @property
    def busy_s(self) -> float:
        """Busy seconds so far (a request in flight now counts up to this moment)."""
        with self._lock:
            open_s = time.perf_counter() - self._since if self._in_flight else 0.0
            return self._busy + open_s
