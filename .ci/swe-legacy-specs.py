"""Regenerate rollgym's tables for SWE-bench <= 4, SWE-Gym and SWE-smith rows from the harness releases that graded
them.

SWE-bench 5 rows carry their own eval script; older rows do not, and swebench 5 has no tables for them. So rollgym
keeps, as data, what those releases read to write a row's eval script (per repository and version: the test command,
the eval commands, the install step; per repository: the log parser), and checks its own script writer against
scripts the releases themselves wrote for sample rows (tests/fixtures/swe_legacy/golden.jsonl).

    python .ci/swe-legacy-specs.py FORK_CHECKOUT

SWE-smith's repository profiles (swesmith 0.0.9) go to envs/swe/swesmith_profiles.json.

Run it with a Python where `swebench==4.1.0` and `swesmith==0.0.9` are installed (PyPI, MIT) and FORK_CHECKOUT is SWE-Gym's fork of the
harness (github.com/SWE-Gym/SWE-Bench-Fork, MIT, commit 242429c, package version 2.0.13). Each release runs in its
own subprocess, as each is a package named `swebench`.
"""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "envs" / "swe" / "legacy_specs.json"
GOLDEN = ROOT / "tests" / "fixtures" / "swe_legacy" / "golden.jsonl"
SWESMITH = ROOT / "envs" / "swe" / "swesmith_profiles.json"

TEST_PATCH = (
    "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n x\n+y\n"
    "diff --git a/{data} b/{data}\nnew file mode 100644\n--- /dev/null\n+++ b/{data}\n@@ -0,0 +1 @@\n+z\n"
)
#: sample rows per release: (repo, version, test file, a data file the test patch adds)
SAMPLES = {
    "swebench-legacy": [
        ("django/django", "3.0", "tests/template_tests/filter_tests/test_join.py", "tests/fixtures/data.json"),
        ("sympy/sympy", "1.12", "sympy/core/tests/test_basic.py", "sympy/core/tests/data.txt"),
        ("astropy/astropy", "5.0", "astropy/io/fits/tests/test_header.py", "astropy/data.yaml"),
        ("psf/requests", "2.26", "tests/test_requests.py", "tests/data.txt"),
        ("matplotlib/matplotlib", "3.5", "lib/matplotlib/tests/test_axes.py", "lib/x.png"),
        ("gin-gonic/gin", "4003", "context_test.go", "testdata/x.json"),
        ("redis/redis", "13115", "tests/unit/scripting.tcl", "tests/assets/x.txt"),
        ("sharkdp/bat", "3108", "tests/integration_tests.rs", "tests/examples/x.txt"),
        ("google/gson", "2158", "gson/src/test/java/com/google/gson/GsonTest.java", "gson/x.json"),
        ("chartjs/Chart.js", "4.4", "test/specs/core.scale.tests.js", "test/fixtures/x.json"),
        ("laravel/framework", "53914", "tests/Support/SupportStrTest.php", "tests/x.txt"),
        ("jekyll/jekyll", "9141", "test/test_filters.rb", "test/source/x.md"),
    ],
    "swe-gym": [
        ("getmoto/moto", "4.0", "tests/test_s3/test_s3.py", "tests/data.json"),
        ("python/mypy", "1.4", "test-data/unit/check-classes.test", "test-data/unit/fixtures/x.pyi"),
        ("pydantic/pydantic", "2.4", "tests/test_main.py", "tests/data.txt"),
        ("pandas-dev/pandas", "2.0", "pandas/tests/frame/test_api.py", "pandas/tests/data.csv"),
        ("Project-MONAI/MONAI", "1.2", "tests/test_x.py", "tests/data.json"),
    ],
}

DUMP = r"""
import json, sys
{path_setup}
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
{ext_import}
repos = {{}}
for repo, versions in MAP_REPO_VERSION_TO_SPECS.items():
    parser = MAP_REPO_TO_PARSER.get(repo) or MAP_REPO_TO_PARSER.get(repo.lower())
    ext = {ext_of}
    if parser is None or repo in {own_test_cmds}:  # a repository whose test command is code (wp-calypso)
        continue
    kept = {{}}
    for version, spec in versions.items():
        if ext != "py":  # the common script (and JavaScript's): test commands, build steps
            kept[version] = {{k: spec[k] for k in ("test_cmd", "build") if k in spec}}
        elif isinstance(spec.get("test_cmd"), str):
            kept[version] = {{k: spec[k] for k in ("test_cmd", "eval_commands", "install") if k in spec}}
    if kept:
        script = {{}} if ext == "py" else {{"script": "js" if ext == "js" else "common"}}
        repos[repo] = {{"parser": parser.__name__, "versions": kept, **script}}
samples = json.loads(sys.argv[1])
scripts = []
for row in samples:  # the eval script as the release's TestSpec.eval_script writes it (its env script needs network)
    specs = MAP_REPO_VERSION_TO_SPECS[row["repo"] if row["repo"] == "python/mypy" else {repo_key}][row["version"]]
    lines = make_eval_script_list(row, specs, "testbed", "/testbed", row["base_commit"], row["test_patch"])
    scripts.append("\n".join(["#!/bin/bash", {header!r}] + lines) + "\n")
print(json.dumps({{"repos": repos, "scripts": scripts}}))
"""


def sample_rows(release: str) -> list[dict]:
    rows = []
    for i, (repo, version, path, data) in enumerate(SAMPLES[release]):
        iid = f"{repo.replace('/', '__')}-{1000 + i}"
        f2p = ["test_a"] if repo == "python/mypy" else [f"{path}::test_a"]
        patch = TEST_PATCH.format(path=path, data=data)
        if repo == "python/mypy":
            patch = patch.replace("+y\n", "+[case testNewCase]\n+[case testOther]\n")
        rows.append(
            {
                "instance_id": iid,
                "repo": repo,
                "version": version,
                "base_commit": f"{i:040x}",
                "environment_setup_commit": f"{i + 100:040x}",
                "problem_statement": "p",
                "hints_text": "",
                "patch": "",
                "test_patch": patch,
                "FAIL_TO_PASS": json.dumps(f2p),
                "PASS_TO_PASS": "[]",
                "created_at": "2024-01-01T00:00:00Z",
            }
        )
    return rows


def dump(release: str, fork: Path | None) -> dict:
    if fork is None:
        code = DUMP.format(
            path_setup="",
            ext_import="from swebench.harness.constants import MAP_REPO_TO_EXT\n"
            "from swebench.harness.test_spec.javascript import MAP_REPO_TO_TEST_CMDS\n"
            "from swebench.harness.test_spec.create_scripts import make_eval_script_list",
            ext_of='MAP_REPO_TO_EXT.get(repo, "py")',
            own_test_cmds="MAP_REPO_TO_TEST_CMDS",
            repo_key='row["repo"]',
            header="set -uxo pipefail",
        )
    else:
        code = DUMP.format(
            path_setup=f"sys.path.insert(0, {str(fork)!r})",
            ext_import="from swebench.harness.test_spec import make_eval_script_list",
            ext_of='"py"',
            own_test_cmds="()",
            repo_key='row["repo"].lower()',
            header="set -xo pipefail",
        )
    rows = sample_rows(release)
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(rows)], stdout=subprocess.PIPE, text=True, check=True, cwd="/tmp"
    ).stdout
    data = json.loads(out.strip().splitlines()[-1])
    data["rows"] = rows
    return data


SWESMITH_DUMP = r"""
import ast, inspect, json, re, textwrap
from swesmith.profiles import registry
SUPPORTED = set(json.loads(__import__("sys").argv[1]))
#: how a profile names the test files of its tests (`get_test_files`), when it does
TEST_FILES = {"PythonProfile": "python", "MidoA0158ff9": "python-dev-prefix", "PythonSlugify872b3750": "test.py",
              "TornadoD5ac65c1": "unittest-ids", "GoProfile": "go", "RepoProfile": "none"}
out, unsupported = {}, {}
for rp in {id(p): p for p in registry.values()}.values():
    kind = next(k.__name__ for k in type(rp).__mro__ if k.__name__.endswith("Profile") and k.__name__ != "RepoProfile")
    owner = type(rp).log_parser.__qualname__.split(".")[0]
    fn = ast.parse(textwrap.dedent(inspect.getsource(type(rp).log_parser))).body[0]
    body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]  # docstring
    call = re.fullmatch(r"return (parse_log_\w+)\(log\)", ast.unparse(body[0])) if len(body) == 1 else None
    parser = call.group(1) if call else f"{owner}.log_parser"
    files = TEST_FILES.get(type(rp).get_test_files.__qualname__.split(".")[0])
    command = type(rp).get_test_cmd.__qualname__.split(".")[0]
    if parser not in SUPPORTED:
        unsupported[rp.repo_name] = f"{kind} with a log parser rollgym does not have ({parser})"
    elif files is None or command != "RepoProfile":
        unsupported[rp.repo_name] = f"{kind} with its own " + ("test command" if files else "test file rule")
    else:
        out[rp.repo_name] = {"commit": rp.commit, "image": rp.image_name, "test_cmd": rp.test_cmd,
                             "timeout": rp.timeout, "min_testing": rp.min_testing, "parser": parser,
                             "test_files": files, "language": kind.removesuffix("Profile").lower()}
print(json.dumps({"profiles": out, "unsupported": unsupported}))
"""


def swesmith_profiles() -> dict:
    """SWE-smith's repository profiles (swesmith 0.0.9, with swebench 4.1.0): those rollgym grades (each with the
    name of its parser in `swesmith_parsers.PARSERS`) and, for a clear error, the others."""
    parsers = runpy.run_path(str(ROOT / "envs" / "swe" / "swesmith_parsers.py"))["PARSERS"]  # no rollgym imports
    out = subprocess.run(
        [sys.executable, "-c", SWESMITH_DUMP, json.dumps(sorted(parsers))],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
        cwd="/tmp",
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["source"] = (
        "swesmith 0.0.9 (PyPI, MIT): profiles.registry (each profile's test_cmd, timeout, min_testing, image_name, "
        "log_parser, get_test_files), harness.utils.run_patch_in_container, harness.grading"
    )
    return data


def main() -> None:
    fork = Path(sys.argv[1]).resolve()
    legacy, gym = dump("swebench-legacy", None), dump("swe-gym", fork)
    specs = {
        "swebench-legacy": {
            "source": "swebench 4.1.0 (PyPI, MIT): harness.constants.MAP_REPO_VERSION_TO_SPECS (Python repositories), "
            "harness.log_parsers.MAP_REPO_TO_PARSER, harness.test_spec.python.make_eval_script_list_py",
            "repos": legacy["repos"],
        },
        "swe-gym": {
            "source": "SWE-Gym/SWE-Bench-Fork 242429c (swebench 2.0.13, MIT): harness.constants."
            "MAP_REPO_VERSION_TO_SPECS, harness.log_parsers.MAP_REPO_TO_PARSER, harness.test_spec.make_eval_script_list",
            "repos": gym["repos"],
        },
    }
    SPECS.write_text(json.dumps(specs, indent=1, sort_keys=True) + "\n")
    SWESMITH.write_text(json.dumps(swesmith_profiles(), indent=1, sort_keys=True) + "\n")
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    with GOLDEN.open("w") as fh:
        for release, data in (("swebench-legacy", legacy), ("swe-gym", gym)):
            for row, script in zip(data["rows"], data["scripts"], strict=True):
                fh.write(json.dumps({"release": release, "row": row, "eval_script": script}) + "\n")
    n = {k: sum(len(r["versions"]) for r in v["repos"].values()) for k, v in specs.items()}
    print(f"wrote {SPECS.relative_to(ROOT)} ({n}) and {GOLDEN.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
