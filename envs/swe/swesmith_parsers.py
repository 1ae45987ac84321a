"""SWE-smith's log parsers, by the name of the swesmith 0.0.9 function (or profile method) each one reads logs as.

A profile's parser decides which tests ran and how they ended, so each here returns exactly what its SWE-smith
counterpart returns for any log, quirks included (tests/envs/swe/test_swe_swesmith_parsers.py runs both on the same
logs). `STATUS` names are swebench's `TestStatus` values.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

#: swebench 4.1.0's TestStatus, in its order
STATUSES = ("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")
PASSED, FAILED, SKIPPED, ERROR = "PASSED", "FAILED", "SKIPPED", "ERROR"
Parser = Callable[[str], dict[str, str]]


def _by_status_prefix(prefix: str) -> Parser:
    """Lines `<prefix><STATUS> <test id>` (pytest's `-rA` summary; `[gwN] ` before it under xdist)."""
    patterns = [(status, re.compile(rf"^{prefix}{status}\s(\S+)")) for status in STATUSES]

    def parse(log: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in log.split("\n"):
            for status, pattern in patterns:
                if match := pattern.match(line):
                    found[match.group(1)] = status
        return found

    return parse


def python_verbose(log: str) -> dict[str, str]:
    """`PythonProfile.log_parser`: `<test id> <STATUS>` lines, pytest's verbose form (a later status wins)."""
    found: dict[str, str] = {}
    for line in log.split("\n"):
        for status in STATUSES:
            if match := re.match(rf"^(\S+)(\s+){status}", line):
                found[match.group(1)] = status
    return found


def unittest_slugify(log: str) -> dict[str, str]:
    """python-slugify's: unittest's verbose `name ... ok|FAIL|ERROR` lines, names of a restricted alphabet."""
    name = r"^([a-zA-Z0-9_\-,\.\s\(\)']+)\s\.{3}\s"
    found: dict[str, str] = {}
    for line in log.split("\n"):
        for word, status in (("ok", PASSED), ("FAIL", FAILED), ("ERROR", ERROR)):
            if match := re.match(f"{name}{word}$", line):
                found[match.group(1)] = status
                if word == "ok":
                    break
    return found


def unittest_tornado(log: str) -> dict[str, str]:
    """tornado's: `name ... ok`, `name ... skipped why`, and `ERROR:`/`FAIL:` headers (the two words after them)."""
    found: dict[str, str] = {}
    for line in log.split("\n"):
        if line.endswith("... ok"):
            found[line.split(" ... ")[0]] = PASSED
        elif " ... skipped " in line:
            found[line.split(" ... ")[0]] = SKIPPED
        elif line.startswith(("ERROR:", "FAIL:")):
            found[" ".join(line.split()[1:3])] = FAILED
    return found


_GO = (
    (re.compile(r"--- PASS: (\S+)"), PASSED),
    (re.compile(r"--- FAIL: (\S+)"), FAILED),
    (re.compile(r"FAIL:?\s?(.+?)\s"), FAILED),
    (re.compile(r"--- SKIP: (\S+)"), SKIPPED),
)


def go_test(log: str) -> dict[str, str]:
    """`GoProfile.log_parser`: `go test -v`'s `--- PASS|FAIL|SKIP: name` lines, and `FAIL <package>` lines."""
    found: dict[str, str] = {}
    for line in log.split("\n"):
        for pattern, status in _GO:
            if match := pattern.match(line.strip()):
                found[match.group(1)] = status
                break
    return found


def cargo_test(log: str) -> dict[str, str]:
    """`RustProfile.log_parser`: `test name ... ok|FAILED` lines (ignored tests are not read)."""
    found: dict[str, str] = {}
    for raw in log.splitlines():
        line = raw.removeprefix("test ")
        if "... ok" in line:
            found[line.rsplit(" ... ", 1)[0].strip()] = PASSED
        elif "... FAILED" in line:
            found[line.rsplit(" ... ", 1)[0].strip()] = FAILED
    return found


def _symbols(symbols: dict[str, str], fallback: re.Pattern[str] | None = None) -> Parser:
    """Reporters that mark each test with a symbol (`✓ name (5 ms)`); `fallback` reads other lines as failures."""
    pattern = re.compile(rf"^\s*({'|'.join(map(re.escape, symbols))})\s(.+?)(?:\s\((\d+\s*m?s)\))?$")

    def parse(log: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in log.split("\n"):
            if match := pattern.match(line.strip()):
                found[match.group(2)] = symbols[match.group(1)]
            elif fallback is not None and (match := fallback.match(line.strip())):
                found[match.group(1)] = FAILED
        return found

    return parse


#: `parse_log_jest`: jest --verbose
jest = _symbols({"✓": PASSED, "✕": FAILED, "○": SKIPPED})
#: `parse_log_mocha`: mocha's spec reporter, and its numbered failures (`1) name`)
mocha = _symbols(
    {"✓": PASSED, "✔": PASSED, "✖": FAILED, "-": SKIPPED}, re.compile(r"^\s*\d+\)\s+(.+?)(?:\s\((\d+\s*m?s)\))?$")
)

_VITEST = [
    (re.compile(r"^✓\s+(.+?)(?:\s+\([\.\d]+ms\))?$"), PASSED),
    (re.compile(r"^❯\s+(.+?)(?:\s+\(.*?\))?$"), FAILED),
    (re.compile(r"^✗\s+(.+?)(?:\s+\([\.\d]+ms\))?$"), FAILED),
    (re.compile(r"^○\s+(.+?)(?:\s+\([\.\d]+ms\))?$"), SKIPPED),
    (re.compile(r"^✓\s+(.+?)$"), PASSED),
    (re.compile(r"^✗\s+(.+?)$"), FAILED),
    (re.compile(r"^○\s+(.+?)$"), SKIPPED),
]


def vitest(log: str) -> dict[str, str]:
    """`parse_log_vitest`: vitest's file and test lines (`✓`, `❯` a file with failures, `✗`, `○`), names cut at `(`."""
    found: dict[str, str] = {}
    for line in log.split("\n"):
        for pattern, status in _VITEST:
            if match := pattern.match(line.strip()):
                found[match.group(1).strip().split("(")[0].strip()] = status
                break
    return found


_SUREFIRE_PREFIXED = re.compile(r"^\[(INFO|ERROR)\]\s+(.*?)\s+--\s+Time elapsed:\s+([\d.]+)\s")
_SUREFIRE_PLAIN = re.compile(r"^([a-zA-Z0-9_]+)\(([a-zA-Z0-9_.]+)\)\s+Time elapsed:\s+([\d.]+)\s+sec")


def maven_surefire(log: str) -> dict[str, str]:
    """`parse_log_maven_surefire`: Surefire's per-method `[INFO|ERROR] name -- Time elapsed: ...` lines (`<<< FAILURE!`
    on an ERROR line fails), and older `method(Class)  Time elapsed: ... sec` lines as `Class.method` passed."""
    found: dict[str, str] = {}
    for raw in log.split("\n"):
        line = raw.strip()
        if line.startswith("["):
            failed = line.startswith("[ERROR]") and line.endswith("<<< FAILURE!")
            if (failed or "Time elapsed:" in line) and (match := _SUREFIRE_PREFIXED.match(line)):
                found[match.group(2)] = FAILED if failed else PASSED
        elif "Time elapsed:" in line and "(" in line and (match := _SUREFIRE_PLAIN.match(line)):
            found[f"{match.group(2)}.{match.group(1)}"] = PASSED
    return found


def gradle_junit_xml(log: str) -> dict[str, str]:
    """`parse_log_gradle_junit_xml`: the JUnit XML reports the test command prints, `class.method` each."""
    found: dict[str, str] = {}
    for document in re.findall(r"<\?xml version.*?</testsuite>", log, re.DOTALL):
        try:
            suite = ET.fromstring(document)
        except ET.ParseError:
            continue
        for case in suite.findall(".//testcase"):
            name = f"{case.get('classname', suite.get('name', ''))}.{case.get('name', '')}"
            if case.find("failure") is not None or case.find("error") is not None:
                found[name] = FAILED
            else:
                found[name] = SKIPPED if case.find("skipped") is not None else PASSED
    return found


_CTEST_LINE = re.compile(r"\s*\d+/\d+\s+Test\s+#\d+:\s+([\w\-/.]+)\s+\.+\s+(Passed|Failed)", re.IGNORECASE)
_CTEST_FAILED = re.compile(r"The following tests FAILED:\n((?:\s+\d+\s+-\s+[\w\-/.]+.*\n?)+)")
_CTEST_SUMMARY = re.compile(r"(\d+)%\s+tests\s+passed,\s+(\d+)\s+tests\s+failed\s+out\s+of\s+(\d+)", re.IGNORECASE)


def _synthetic(found: dict[str, str], passed: int, failed: int, names: tuple[str, str], start: int) -> None:
    """Counts without names, as the parsers record them: one made-up test per passed and per failed test."""
    found.update({f"{names[0]}{i + start}": PASSED for i in range(passed)})
    found.update({f"{names[1]}{i + start}": FAILED for i in range(failed)})


def ctest(log: str) -> dict[str, str]:
    """`parse_log_ctest`: `n/N Test #k: name ....  Passed|Failed`, the `tests FAILED:` list, else the summary's
    counts as made-up tests."""
    found = {m.group(1): PASSED if m.group(2).lower() == "passed" else FAILED for m in _CTEST_LINE.finditer(log)}
    if section := _CTEST_FAILED.search(log):
        for line in section.group(1).splitlines():
            if match := re.search(r"\d+\s+-\s+([\w\-/.]+)", line):
                found[match.group(1)] = FAILED
    if not found and (summary := _CTEST_SUMMARY.search(log)):
        total, failed = int(summary.group(3)), int(summary.group(2))
        _synthetic(found, total - failed, failed, ("synthetic_pass_", "synthetic_fail_"), 0)
    return found


_GTEST_RESULTS = (
    (re.compile(r"\[\s*(OK|PASSED)\s*\]\s+([\w:/.]+)"), 2, PASSED),
    (re.compile(r"\[\s*FAILED\s*\]\s+([\w:/.]+)(?:\s+\(|$)"), 1, FAILED),
    (re.compile(r"\[\s*(SKIPPED|DISABLED)\s*\]\s+([\w:/.]+)"), 2, SKIPPED),
)


def gtest(log: str) -> dict[str, str]:
    """`parse_log_gtest`: GoogleTest's `[ OK ]`/`[ FAILED ]`/`[ SKIPPED ]` result lines (not its count lines), else
    the `[====] N tests from` summary's counts as made-up tests."""
    found: dict[str, str] = {}
    for raw in log.split("\n"):
        line = raw.strip()
        for pattern, group, status in _GTEST_RESULTS:
            if match := pattern.match(line):
                name = match.group(group)
                if not (name.isdigit() or re.search(r"\d+\s+tests?[\.,]", line)):
                    found[name] = status
                break
    if found:
        return found
    if re.search(r"\[\s*=+\s*\]\s*(\d+)\s+tests?\s+from", log):
        passed = re.search(r"\[\s*PASSED\s*\]\s*(\d+)\s+tests?", log)
        failed = re.search(r"\[\s*FAILED\s*\]\s*(\d+)\s+tests?", log)
        counts = (int(passed.group(1)) if passed else 0, int(failed.group(1)) if failed else 0)
        _synthetic(found, *counts, ("test_passed_", "test_failed_"), 1)
    return found


#: rollgym's parser for each SWE-smith parser name the profile table uses
PARSERS: dict[str, Parser] = {
    "PythonProfile.log_parser": python_verbose,
    "Paramiko23f92003.log_parser": _by_status_prefix(""),
    "AutogradAc044f0d.log_parser": _by_status_prefix(r"\[gw\d\]\s"),
    "PythonSlugify872b3750.log_parser": unittest_slugify,
    "TornadoD5ac65c1.log_parser": unittest_tornado,
    "GoProfile.log_parser": go_test,
    "RustProfile.log_parser": cargo_test,
    "parse_log_jest": jest,
    "parse_log_mocha": mocha,
    "parse_log_vitest": vitest,
    "parse_log_maven_surefire": maven_surefire,
    "parse_log_gradle_junit_xml": gradle_junit_xml,
    "parse_log_ctest": ctest,
    "parse_log_gtest": gtest,
}
