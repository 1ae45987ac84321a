"""The suite's CPU report (tests/support/cpu_time.py): a test that computes is listed with its CPU, one that sleeps
near zero, in one process and through xdist workers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SUPPORT_PARENT = Path(__file__).parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(SUPPORT_PARENT)!r})
from support.cpu_time import CpuTime

def pytest_configure(config):
    config.pluginmanager.register(CpuTime(), "cpu")
"""

TESTS = """
import time

import pytest

def test_burns():
    end = time.process_time() + 0.6
    while time.process_time() < end:
        pass

def test_sleeps():
    time.sleep(0.6)

@pytest.fixture
def burnt():
    end = time.process_time() + 0.6
    while time.process_time() < end:
        pass

def test_burns_in_its_fixture(burnt):
    pass
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_report_lists_cpu_not_wall_time(tmp_path, workers):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_load.py").write_text(TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests that used the most CPU" in done.stdout, done.stdout
    cpu = {m[1]: float(m[0]) for m in re.findall(r"^\s*([\d.]+)s cpu\s+\S+::(\w+)$", done.stdout, re.M)}
    assert cpu["test_burns"] >= 0.5, done.stdout
    assert cpu["test_sleeps"] < 0.3, done.stdout
    assert cpu["test_burns_in_its_fixture"] >= 0.5, done.stdout  # setup counts: fixtures compute for their test
