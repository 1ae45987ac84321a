"""The fault suite (issue 17): every case of `catalog.CASES` in a real SWE sandbox, beside a clean rollout,
must end as designed, attributed right, in bounded time and host memory, with no rollout lost or
duplicated and no container left. `benchmarks/bench_faults.py` runs the same cases several times."""

from __future__ import annotations

import pytest
from catalog import CASES, run_case

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def swe_task(docker_engine):
    from rollgym.envs.swe.images import ensure_task_image
    from rollgym.envs.swe.task import load_bundled_tasks

    task = load_bundled_tasks()[0]
    ensure_task_image(task, log=lambda _m: None)
    return task.model_dump(mode="json")


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=[pytest.mark.slow] if c.slow else [], id=c.name) for c in CASES]
)
def test_fault(case, tool_tok, swe_task):
    outcome = run_case(case, tool_tok, swe_task)
    assert outcome.problems == [], outcome.problems
    assert outcome.survived and outcome.attribution_right and outcome.clear_error
    assert outcome.lost == outcome.duplicated == outcome.leaked == 0
