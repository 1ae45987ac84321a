"""Each test's CPU time, printed after `--durations` as "the 20 tests that used the most CPU".

The suite's budget is two cores: wall time alone hides whether a slow test computes or waits. A test's figure is
the CPU its pytest process and the children it waited for used from the start of its setup (its fixtures included;
a fixture shared by several tests counts for the first) to its teardown (a server a fixture keeps running is counted
where it is stopped; containers run under the Docker daemon and are not counted). Each
xdist worker measures its own tests and sends the figure with the teardown report; the session's owner adds them up.
"""

from __future__ import annotations

import resource

import pytest

_START = pytest.StashKey[float]()
_KEY = "cpu_s"
_SHOWN = 20


def process_cpu_s() -> float:
    """User + system CPU seconds of this process and its reaped children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class CpuTime:
    """The plugin: measures in whichever process runs the test, reports in the one that owns the session."""

    def __init__(self) -> None:
        self.by_test: dict[str, float] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        item.stash[_START] = process_cpu_s()  # before the fixtures: what they compute is the test's

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "teardown" and _START in item.stash:
            outcome.get_result().user_properties.append((_KEY, process_cpu_s() - item.stash[_START]))

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "teardown":
            for key, value in report.user_properties:
                if key == _KEY:
                    self.by_test[report.nodeid] = float(value)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.by_test:
            return
        total = sum(self.by_test.values())
        terminalreporter.section(f"the {_SHOWN} tests that used the most CPU (all tests: {total:.0f} CPU-seconds)")
        for nodeid, seconds in sorted(self.by_test.items(), key=lambda kv: -kv[1])[:_SHOWN]:
            terminalreporter.write_line(f"{seconds:8.2f}s cpu  {nodeid}")
