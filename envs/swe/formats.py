"""Which dataset a task row comes from, told from its columns, so that each row is graded as its own harness grades
it (docs/tasks.md#row-formats).

- `rollgym`: rows rollgym builds itself (`env_spec`: an sdist and an injected bug) or a prebuilt `image_name` whose
  tests pytest runs; graded by rollgym's pytest plugin.
- `swebench`: SWE-bench 5 rows that describe their own grading (`image`, `eval_script`, `log_parser`, `eval_type`,
  from a dataset or a task folder); graded by the official `swebench` package.
- `swebench-legacy`: SWE-bench <= 4 rows (`version`, `environment_setup_commit`, no `eval_script`); graded by the
  official harness through the eval script swebench 4.1.0 writes (legacy.py).
- `swe-gym`: SWE-Gym rows (SWE-bench <= 4's columns for SWE-Gym's repositories, images `xingyaoww/sweb.eval.*`);
  likewise, through SWE-Gym's fork of the harness (legacy.py).
- `swe-smith`: SWE-smith rows (`repo` = `swesmith/<owner>__<repo>.<commit8>`, the bug as the row's `patch`); graded
  as SWE-smith does (swesmith.py).
- `r2e-gym`: R2E-Gym rows (`docker_image`, `expected_output_json`); graded as R2E-Gym does (r2e.py). The SWE-bench
  rows R2E-Gym republishes (SWE-bench's columns, the image as `docker_image`) are SWE-bench rows.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from rollgym.envs.core.errors import InvalidTaskError

RowFormat = Literal["rollgym", "swebench", "swebench-legacy", "swe-gym", "swe-smith", "r2e-gym"]

#: the columns an SWE-bench 5 row grades itself with (swebench.harness.utils.make_test_spec reads them all)
SWEBENCH_COLUMNS = ("image", "eval_script", "log_parser", "eval_type", "version")
#: R2E-Gym's own columns (R2E-Gym/R2E-Gym-Lite on Hugging Face)
R2E_COLUMNS = ("docker_image", "expected_output_json", "repo_name", "commit_hash")
#: SWE-Gym's repositories (SWE-Gym/SWE-Gym on Hugging Face); their specs are in SWE-Gym's fork of the harness
SWE_GYM_REPOS = frozenset(
    {
        "getmoto/moto",
        "pydantic/pydantic",
        "python/mypy",
        "dask/dask",
        "pandas-dev/pandas",
        "facebookresearch/hydra",
        "bokeh/bokeh",
        "Project-MONAI/MONAI",
        "iterative/dvc",
        "conan-io/conan",
        "modin-project/modin",
    }
)
_SWE_SMITH_ID = re.compile(r"^[\w.-]+__[\w.-]+\.[0-9a-f]{8}\.")


class RowFormatError(InvalidTaskError):
    """A row whose format cannot be told, that mixes formats, or that lacks a column its format needs."""


def _has(row: dict[str, Any], key: str) -> bool:
    value = row.get(key)
    return value is not None and value != "" and value != []


def detect_format(row: dict[str, Any]) -> RowFormat:
    """The row's format, from its columns; `RowFormatError` naming what is missing or mixed."""
    rid = row.get("instance_id") or row.get("repo_name") or "?"
    v5 = [c for c in SWEBENCH_COLUMNS[:4] if _has(row, c)]
    r2e = [c for c in R2E_COLUMNS[:2] if _has(row, c)]
    if r2e == ["docker_image"] and not v5 and _has(row, "version") and _has(row, "FAIL_TO_PASS"):
        r2e = []  # R2E-Gym's republished SWE-bench rows (R2E-Gym/SWE-Bench-Verified): SWE-bench's, its image renamed
    own = ["env_spec"] if _has(row, "env_spec") else []
    marks = [(name, cols) for name, cols in (("SWE-bench 5", v5), ("R2E-Gym", r2e), ("rollgym", own)) if cols]
    if len(marks) > 1:
        mixed = "; ".join(f"{name} ({', '.join(cols)})" for name, cols in marks)
        raise RowFormatError(f"task {rid} mixes row formats: {mixed}; a row is graded one way only: keep one")
    if r2e:
        missing = [c for c in R2E_COLUMNS if not _has(row, c)]
        if missing:
            raise RowFormatError(f"task {rid} looks like an R2E-Gym row but has no {', '.join(missing)}")
        return "r2e-gym"
    if v5:
        missing = [c for c in SWEBENCH_COLUMNS if not _has(row, c)]
        if missing:
            raise RowFormatError(
                f"task {rid} looks like an SWE-bench 5 row ({', '.join(v5)}) but has no {', '.join(missing)}: "
                "SWE-bench 5 grades a row with image, eval_script, log_parser, eval_type and version together"
            )
        return "swebench"
    repo = str(row.get("repo") or "")
    if not own and (repo.startswith("swesmith/") or _SWE_SMITH_ID.match(str(row.get("instance_id") or ""))):
        return "swe-smith"  # (its rows name their image too)
    if own or (_has(row, "image_name") and not _has(row, "version")):
        return "rollgym"
    if repo in SWE_GYM_REPOS or str(row.get("image_name") or "").split("/")[-2:-1] == ["xingyaoww"]:
        return "swe-gym"
    if _has(row, "version") or _has(row, "environment_setup_commit"):
        return "swebench-legacy"
    if _has(row, "image_name"):
        return "rollgym"
    raise RowFormatError(
        f"task {rid}: cannot tell its format: give an SWE-bench 5 row (image, eval_script, log_parser, eval_type, "
        "version), an SWE-bench/SWE-Gym row (version), an SWE-smith or R2E-Gym row, or a rollgym row (env_spec or "
        "image_name)"
    )


# The image reference grammar of the distribution project (distribution/reference: [domain/]path[:tag][@digest]).
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)"
_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"^(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)


def check_image_reference(image: str, task_id: str) -> str:
    """`image` if it is a valid image reference, else `RowFormatError` saying why (names are lower-case)."""
    if len(image) > 255 or not _REFERENCE.match(image):
        hint = (
            " (repository names are lower-case)" if image.lower() != image and _REFERENCE.match(image.lower()) else ""
        )
        raise RowFormatError(f"task {task_id}: {image!r} is not a valid image reference{hint}")
    return image
