"""rollgym's SWE-smith parsers read every log as SWE-smith's own do (swesmith 0.0.9, run in the venv
`.ci/harnesses-up` makes): real-shaped logs of each runner, and a seeded random corpus that mixes lines of every
runner, torn and joined, so each parser also meets the others' lines and its own quirks."""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from rollgym.envs.swe.swesmith import table
from rollgym.envs.swe.swesmith_parsers import PARSERS

THEIRS = r"""
import json, sys
from swesmith.profiles import registry
from swesmith.profiles import cpp, java, javascript

functions = {**vars(javascript), **vars(java), **vars(cpp)}
methods = {}
for rp in registry.values():
    methods.setdefault(type(rp).log_parser.__qualname__, rp.log_parser)
cases = json.loads(sys.stdin.read())
out = {name: [(functions.get(name) or methods[name])(log) for log in logs] for name, logs in cases.items()}
print("RESULT " + json.dumps(out))
"""

LINES = [
    # pytest: verbose, -rA, xdist
    "tests/test_a.py::test_x PASSED [ 50%]",
    "tests/test_a.py::test_y FAILED",
    "tests/test_a.py::test_z SKIPPED (no reason)",
    "tests/test_a.py::test_w XFAIL",
    "PASSED tests/test_a.py::test_x",
    "FAILED tests/test_a.py::test_y - AssertionError",
    "ERROR tests/test_b.py::test_e",
    "[gw0] PASSED tests/test_a.py::test_x",
    "[gw1] FAILED tests/test_a.py::test_y",
    "[gw12] PASSED tests/test_a.py::test_q",
    # unittest, tornado
    "test_slug (test.TestSlug) ... ok",
    "test_other (test.TestSlug) ... FAIL",
    "test_bad (test.TestSlug) ... ERROR",
    "test_skip (tornado.test.web_test.WebTest) ... skipped 'needs network'",
    "ERROR: test_bad (tornado.test.web_test.WebTest)",
    "FAIL: test_other (tornado.test.web_test.WebTest)",
    # go test -v
    "=== RUN   TestTruncate",
    "--- PASS: TestTruncate (0.00s)",
    "    --- PASS: TestTruncate/ascii (0.00s)",
    "--- FAIL: TestPad (0.01s)",
    "--- SKIP: TestWrap (0.00s)",
    "FAIL\tgithub.com/x/strutil\t0.004s",
    "FAIL github.com/x/strutil/wrap [build failed]",
    "ok  \tgithub.com/x/strutil\t0.003s",
    # cargo test
    "test tests::it_works ... ok",
    "test tests::it_breaks ... FAILED",
    "test tests::ignored ... ignored",
    "test result: FAILED. 1 passed; 1 failed; 1 ignored",
    # jest, mocha, vitest
    "  ✓ adds numbers (5 ms)",
    "  ✕ subtracts numbers (12 ms)",
    "  ○ skipped multiplies",
    "    ✔ parses a date",
    "    ✖ rejects a bad date",
    "    - pending feature",
    "  1) formats a number:",
    "  2) rounds half up (3ms)",
    " ✓ test/math.test.ts (9 tests) 22ms",
    " ❯ test/date.test.ts (4 tests | 1 failed) 31ms",
    "   ✗ date > parses ISO (2.5ms)",
    "   ○ date > timezone",
    # maven surefire
    "[INFO] testSerialize -- Time elapsed: 0.012 s",
    "[ERROR] testDeserialize -- Time elapsed: 0.004 s <<< FAILURE!",
    "[ERROR] testOther -- Time elapsed: 0.004 s <<< ERROR!",
    "testRoundTrip(com.google.gson.GsonTest)  Time elapsed: 0.001 sec",
    "[INFO] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0",
    # gradle junit xml
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<testsuite name="net.x.ParseTest" tests="3">',
    '  <testcase name="parsesLength" classname="net.x.ParseTest" time="0.01"/>',
    '  <testcase name="rejectsBad" classname="net.x.ParseTest"><failure message="x">boom</failure></testcase>',
    '  <testcase name="later" classname="net.x.ParseTest"><skipped/></testcase>',
    '  <testcase name="noclass"/>',
    "</testsuite>",
    # ctest
    " 1/3 Test #1: unit_strings .....................   Passed    0.02 sec",
    " 2/3 Test #2: unit_parse .......................***Failed    0.10 sec",
    " 3/3 Test #3: unit_io ..........................   Passed    0.01 sec",
    "The following tests FAILED:",
    "\t  2 - unit_parse (Failed)",
    "67% tests passed, 1 tests failed out of 3",
    # gtest
    "[==========] 3 tests from 1 test suite ran. (1 ms total)",
    "[ RUN      ] Strings.Trim",
    "[       OK ] Strings.Trim (0 ms)",
    "[  FAILED  ] Strings.Split (1 ms)",
    "[  SKIPPED ] Strings.Wide",
    "[  PASSED  ] 1 test.",
    "[  FAILED  ] 1 test, listed below:",
    # noise
    "",
    "\x1b[32mPASSED\x1b[0m tests/test_a.py::test_c",
    "collected 4 items",
    "+ : '>>>>> End Test Output'",
]


def _corpus(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    logs = []
    for _ in range(count):
        lines = rng.choices(LINES, k=rng.randint(0, 14))
        if lines and rng.random() < 0.3:  # a line cut short, or two run together
            i = rng.randrange(len(lines))
            lines[i] = lines[i][: rng.randint(0, len(lines[i]))] + rng.choice(["", " ", "\r", LINES[rng.randrange(8)]])
        logs.append(rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"]))
    return logs


def test_every_parser_the_table_names_is_one_rollgym_has():
    named = {p["parser"] for p in table()["profiles"].values()}
    assert named == set(PARSERS)
    assert len(table()["profiles"]) == 647 and len(table()["unsupported"]) == 26


@pytest.mark.slow
def test_rollgyms_parsers_read_each_log_as_swe_smiths_do():
    from support.swesmith import python

    interpreter = python()
    if interpreter is None:
        pytest.skip("SWE-smith's harness venv is missing (.ci/harnesses-up failed: see its output)")
    whole = "\n".join(LINES)
    cases = {name: [whole, *_corpus(seed, 300)] for seed, name in enumerate(sorted(PARSERS))}
    proc = subprocess.run(
        [str(interpreter), "-c", THEIRS], input=json.dumps(cases), capture_output=True, text=True, timeout=300
    )
    result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert result, proc.stderr[-3000:]
    theirs = json.loads(result[-1][len("RESULT ") :])
    for name, logs in cases.items():
        ours = [PARSERS[name](log) for log in logs]
        differ = [(log, o, t) for log, o, t in zip(logs, ours, theirs[name], strict=True) if o != t]
        assert not differ, (name, differ[:2])
        assert any(ours), f"{name} read no test in any log: the corpus does not exercise it"
