"""Author rollgym's bundled SWE tasks the SWE-smith way: inject a bug into a real PyPI sdist,
find the tests it breaks (FAIL_TO_PASS) and keeps (PASS_TO_PASS), write envs/swe/tasks/bundled.jsonl.

Run from the repository root (needs Docker): `.venv/bin/python envs/swe/tasks/make_bundled.py`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import sys
import tarfile
from pathlib import Path

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, bootstrap_base_image
from rollgym.envs.sandbox.images import build_image_from_dockerfile
from rollgym.envs.swe.grading import grade_patch
from rollgym.envs.swe.images import task_dockerfile
from rollgym.envs.swe.task import BUNDLED_TASKS, TASKS_DIR, ImageRecipe, SWETask

SDISTS = {
    "inflection": ("inflection-0.5.1.tar.gz", "jpvanhal/inflection", ["test_inflection.py"]),
    "parse": ("parse-1.20.2.tar.gz", "r1chardj0n3s/parse", ["tests"]),
}

# (instance_id, project, file, old, new, problem statement, optional test appended to a test file)
BUGS = [
    (
        "inflection__ordinal-teens",
        "inflection",
        "inflection/__init__.py",
        "if number % 100 in (11, 12, 13):",
        "if number % 100 in (11, 12):",
        "`ordinalize(13)` returns `'13rd'` and `ordinalize(113)` returns `'113rd'`; English uses "
        "'13th' and '113th'. Other numbers such as 3, 23 and 1003 look right.",
        None,
    ),
    (
        "inflection__ordinal-negative",
        "inflection",
        "inflection/__init__.py",
        "number = abs(int(number))",
        "number = int(number)",
        "Ordinal suffixes are wrong for negative numbers: `ordinalize(-1)` gives `'-1th'` and "
        "`ordinal(-2)` gives `'th'`, while the documentation promises `'-1st'` / `'nd'`, the same suffix "
        "as for the positive number.",
        (
            "test_inflection.py",
            "\n\ndef test_ordinal_of_negative_small_numbers():\n"
            "    assert [inflection.ordinalize(n) for n in (-1, -2, -3, -4)] == ['-1st', '-2nd', '-3rd', '-4th']\n",
        ),
    ),
    (
        "inflection__underscore-acronym",
        "inflection",
        "inflection/__init__.py",
        "    word = re.sub(r\"([A-Z]+)([A-Z][a-z])\", r'\\1_\\2', word)\n",
        "",
        "`underscore()` no longer separates a leading acronym from the next word: "
        "`underscore('HTMLTidy')` returns `'htmltidy'` and `tableize('HTTPRequest')`-style names come out "
        "glued together. Words without acronyms ('DeviceType' -> 'device_type') still work.",
        None,
    ),
    (
        "parse__negative-base-prefix",
        "parse",
        "parse.py",
        "            sign = -1\n            number_start = 1\n",
        "            sign = -1\n            number_start = 0\n",
        "Negative integers written with a base prefix are not parsed: `parse('{:d}', '-0x1f')` and "
        "`parse('a {:d} b', 'a -0b1010 b')` fail or give wrong values, while '0x1f', '-31' and '+0x1f' work.",
        None,
    ),
    (
        "parse__dict-field-names",
        "parse",
        "parse.py",
        "                    k = subkey[1:-1]\n",
        "                    k = subkey[1:]\n",
        "Dict-style field names are broken: `parse('{person[name]} is {person[age]:d}', 'Bob is 42')` "
        "returns named results whose inner keys end with a bracket, e.g. `{'person': {'name]': 'Bob', ...}}` "
        "instead of `{'person': {'name': 'Bob', 'age': 42}}`.",
        None,
    ),
    (
        "parse__fixed-spans",
        "parse",
        "parse.py",
        "spans.update((i, m.span(n + 1)) for i, n in enumerate(self._fixed_fields))",
        "spans.update((i, m.span(n)) for i, n in enumerate(self._fixed_fields))",
        "`Result.spans` is wrong for positional (unnamed) fields: for `parse('hello {}', 'hello world')` "
        "the span of field 0 covers the whole string instead of just 'world'. Named fields are fine.",
        None,
    ),
]


def file_diff(path: str, before: str, after: str) -> str:
    """A git-style unified diff of one file."""
    body = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"))
    return f"diff --git a/{path} b/{path}\n{body}" if body else ""


def read_member(sdist: Path, path: str) -> str:
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        return tar.extractfile(f"{top}/{path}").read().decode()


def author(bug) -> dict:
    instance_id, project, path, old, new, statement, extra_test = bug
    sdist_name, repo, test_paths = SDISTS[project]
    sdist = TASKS_DIR / "sdists" / sdist_name
    original = read_member(sdist, path)
    assert original.count(old) == 1, f"{instance_id}: the bug site must be unique"
    bugged = original.replace(old, new)
    test_patch = ""
    if extra_test:
        tpath, addition = extra_test
        tsrc = read_member(sdist, tpath)
        test_patch = file_diff(tpath, tsrc, tsrc + addition)
    spec = ImageRecipe(
        sdist=sdist_name,
        sdist_sha256=hashlib.sha256(sdist.read_bytes()).hexdigest(),
        bug_patch=file_diff(path, original, bugged),
    )
    draft = SWETask(
        instance_id=instance_id,
        repo=repo,
        base_commit="0" * 40,
        problem_statement=statement,
        patch=file_diff(path, bugged, original),
        test_patch=test_patch,
        FAIL_TO_PASS=test_paths,
        env_spec=spec,
    )
    dockerfile, files = task_dockerfile(draft, expect_commit=False)
    tag = build_image_from_dockerfile(dockerfile, f"rollgym/swe-task-draft:{instance_id.lower()}", files=files)
    with DockerSandbox(SandboxConfig(image=tag, workdir="/testbed", task_id="author")) as sb:
        draft.base_commit = sb.exec("git rev-parse HEAD").output.strip()
    gold = grade_patch(draft, draft.patch, keep_all_outcomes=True)
    empty = grade_patch(draft, "", keep_all_outcomes=True)
    assert gold.all_outcomes and empty.all_outcomes, (gold, empty)
    f2p = sorted(t for t, o in gold.all_outcomes.items() if o == "passed" and empty.all_outcomes.get(t) != "passed")
    p2p = sorted(t for t, o in gold.all_outcomes.items() if o == "passed" and empty.all_outcomes.get(t) == "passed")
    assert f2p, f"{instance_id}: the injected bug breaks no test"
    print(f"{instance_id}: base {draft.base_commit[:10]}, {len(f2p)} F2P, {len(p2p)} P2P", file=sys.stderr)
    row = draft.model_dump(mode="json", exclude={"test_timeout_s": True, "sandbox": True, "env_spec": {"task_file"}})
    row.update(FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p)
    return row


def main() -> None:
    bootstrap_base_image()
    rows = [author(bug) for bug in BUGS]
    with open(BUNDLED_TASKS, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} tasks to {BUNDLED_TASKS}")


if __name__ == "__main__":
    main()
