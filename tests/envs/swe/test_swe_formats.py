"""Row formats told from the columns, with a clear error for a row that mixes formats, lacks a column its format
needs, names a parser the harness does not have, never prints the harness's markers, or names an invalid image."""

from __future__ import annotations

import pytest

from rollgym.envs.swe.formats import RowFormatError, detect_format
from rollgym.envs.swe.harness import environment_of, parser_names
from rollgym.envs.swe.task import load_bundled_tasks, parse_task

COMMON = {
    "instance_id": "django__django-11099",
    "repo": "django/django",
    "base_commit": "d26b2424437dabeeca94d7900b37d2df4410da0c",
    "problem_statement": "UsernameValidator allows a trailing newline.",
    "patch": "",
    "test_patch": "",
    "FAIL_TO_PASS": ["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"],
    "PASS_TO_PASS": [],
}
EVAL = """#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
export LANG=en_US.UTF-8
export LC_ALL='en_US.UTF-8'
: '>>>>> Start Test Output'
./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 auth_tests.test_validators
: '>>>>> End Test Output'
"""
V5 = {
    **COMMON,
    "image": "swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
    "eval_script": EVAL,
    "log_parser": "parse_log_django",
    "eval_type": "pass_and_fail",
    "version": "3.0",
}


def test_each_format_is_told_from_its_columns():
    assert detect_format(V5) == "swebench"
    assert {detect_format(t.model_dump(mode="json")) for t in load_bundled_tasks()} == {"rollgym"}
    assert detect_format({**COMMON, "version": "3.0", "environment_setup_commit": "abc"}) == "swebench-legacy"
    assert detect_format({**COMMON, "repo": "getmoto/moto", "version": "5.0"}) == "swe-gym"
    assert detect_format({**COMMON, "repo": "swesmith/oauthlib__oauthlib.1fd52536"}) == "swe-smith"
    assert detect_format({**COMMON, "instance_id": "getmoto__moto.694ce1f4.pr_5011"}) == "swe-smith"
    r2e = {
        "repo_name": "aiohttp",
        "docker_image": "namanjain12/aiohttp_final:f0d7",
        "commit_hash": "f0d7",
        "expected_output_json": "{}",
    }
    assert detect_format(r2e) == "r2e-gym"
    task = parse_task(V5)
    assert task.row_format == "swebench" and task.grader == "swebench" and task.image == V5["image"]
    assert parse_task(load_bundled_tasks()[0].model_dump(mode="json")).grader == "pytest-plugin"


@pytest.mark.parametrize(
    "row, says",
    [
        ({**V5, "docker_image": "x/y:z", "expected_output_json": "{}"}, "mixes row formats: SWE-bench 5"),
        ({**V5, "env_spec": {"sdist": "a.tar.gz"}}, "mixes row formats"),
        ({k: v for k, v in V5.items() if k != "log_parser"}, "has no log_parser"),
        ({k: v for k, v in V5.items() if k not in ("eval_type", "version")}, "has no eval_type, version"),
        ({**V5, "log_parser": "parse_log_djang"}, "log_parser 'parse_log_djang' is not one of the harness's"),
        ({**V5, "eval_script": "#!/bin/bash\n./tests/runtests.py\n"}, "never prints '>>>>> Start Test Output'"),
        ({**V5, "image": "SWEbench/Sweb.Eval"}, "not a valid image reference (repository names are lower-case)"),
        ({**COMMON, "image_name": "a b"}, "'a b' is not a valid image reference"),
        ({"instance_id": "x", "problem_statement": "?"}, "cannot tell its format"),
        ({**COMMON, "repo": "swesmith/oauthlib__oauthlib.1fd52536"}, "a SWE-smith row needs its bug as `patch`"),
        (
            {"repo_name": "aiohttp", "docker_image": "a/b:c", "expected_output_json": "{}", "commit_hash": "f0d7"},
            "R2E-Gym row aiohttp@f0d7: parsed_commit_content has no old_commit_hash",
        ),
    ],
    ids=[
        "v5+r2e",
        "v5+env_spec",
        "no-parser",
        "no-eval-type",
        "unknown-parser",
        "no-markers",
        "bad-image",
        "bad-image-name",
        "unknown",
        "swe-smith-no-bug",
        "r2e-incomplete",
    ],
)
def test_a_bad_row_is_one_clear_error(row, says):
    with pytest.raises(RowFormatError) as info:
        parse_task(row)
    assert says in str(info.value)
    assert isinstance(info.value, ValueError)  # an InvalidTaskError, as every bad row is


def test_the_agent_gets_the_environment_the_eval_script_activates():
    env = environment_of(EVAL)
    assert env["PATH"].startswith("/opt/miniconda3/envs/testbed/bin:") and env["CONDA_DEFAULT_ENV"] == "testbed"
    assert env["LANG"] == "en_US.UTF-8" and env["LC_ALL"] == "en_US.UTF-8"
    assert parse_task(V5).default_sandbox() == {"env": env}
    assert "parse_log_django" in parser_names() and "parse_log_gotest" in parser_names()
