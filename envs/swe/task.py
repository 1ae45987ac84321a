"""SWE task rows (SWE-Gym / SWE-bench / SWE-smith schema) and where their repository comes from."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.core.tasks import read_rows
from rollgym.envs.swe.formats import RowFormat, check_image_reference, detect_format

TASKS_DIR = Path(__file__).parent / "tasks"
BUNDLED_TASKS = TASKS_DIR / "bundled.jsonl"
BUNDLED_SDISTS = TASKS_DIR / "sdists"


#: The unprivileged user agents run as in task images rollgym builds (`SandboxConfig.user` overrides it).
AGENT_USER = "1000:1000"
#: row formats graded by the official SWE-bench harness (legacy and SWE-Gym rows through their release's eval script)
SWEBENCH_GRADED = ("swebench", "swebench-legacy", "swe-gym")


class ImageRecipe(BaseModel):
    """How to build (and test in) a repository image for a row without a prebuilt one: the row's `env_spec` field."""

    model_config = ConfigDict(extra="forbid")

    base_image: str | None = None  # None: rollgym's offline base image
    sdist: str | None = None  # the source: an absolute path, or relative to the task file (see images.sdist_path)
    sdist_sha256: str | None = None
    bug_patch: str = ""  # SWE-smith: a bug injected into the source before the single base commit
    setup_commands: list[str] = Field(default_factory=list)  # run in the workdir while building the image
    workdir: str = "/testbed"
    test_command: str = "python3 -m pytest"  # gets the plugin and test files appended by the grader
    task_file: str | None = None  # set by parse_tasks: the JSONL file the row came from (a relative sdist is beside it)


class SWETask(BaseModel):
    """One task row; unknown columns are kept (extra="allow")."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    repo: str
    base_commit: str  # "" in a SWE-smith row: its state is found in the image (swesmith_state.py)
    problem_statement: str
    patch: str = ""  # the gold patch
    test_patch: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    image_name: str | None = None  # a prebuilt image (SWE-Gym publishes one per instance)
    env_spec: ImageRecipe | None = None
    # SWE-bench 5 rows describe their own grading (swebench.harness.utils.make_test_spec reads these)
    image: str | None = None  # the row's environment: the agent's sandbox and the grader's container
    eval_script: str | None = None  # run after the patch: applies the test patch, runs the tests between markers
    log_parser: str | None = None  # a name in swebench.harness.log_parsers.PARSER_REGISTRY
    eval_type: Literal["pass_and_fail", "fail_only"] | None = None
    version: str | None = None
    task_dir: str | None = None  # a task folder's path (swebench/task/repo.py): its Dockerfile builds `image`
    base_packages: list[str] = Field(default_factory=list)  # Debian packages its Dockerfile's base image needs
    row_format: RowFormat = "rollgym"  # told from the columns by `parse_task` (formats.detect_format)
    test_timeout_s: float = 900.0
    sandbox: dict[str, Any] = Field(default_factory=dict)  # per-task SandboxConfig overrides (mem_limit, cpus, ...)

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """SWE-bench on Hugging Face stores these lists as JSON strings."""
        return json.loads(value) if isinstance(value, str) else value

    @property
    def grader(self) -> Literal["swebench", "r2e", "swesmith", "pytest-plugin"]:
        """Who decides the verdict: the official SWE-bench harness (rows that describe their own grading, and older
        SWE-bench and SWE-Gym rows through their release's script), R2E-Gym's or SWE-smith's (r2e.py, swesmith.py), or
        rollgym's pytest
        plugin (rows rollgym builds, and pytest repositories without an eval script)."""
        if self.row_format == "r2e-gym":
            return "r2e"
        if self.row_format == "swe-smith":
            return "swesmith"
        return "swebench" if self.row_format in SWEBENCH_GRADED else "pytest-plugin"

    @property
    def workdir(self) -> str:
        if self.env_spec is not None:
            return self.env_spec.workdir
        return "/testbed"

    @property
    def test_command(self) -> str:
        if self.env_spec is not None:
            return self.env_spec.test_command
        if self.image_name and "sweb.eval" in self.image_name:  # SWE-bench / SWE-Gym images: a conda env
            return "PATH=/opt/miniconda3/envs/testbed/bin:$PATH python -m pytest"
        return "python3 -m pytest"

    def default_sandbox(self) -> dict[str, Any]:
        """SandboxConfig defaults for this row's image. Images rollgym builds (from `env_spec`) have a
        repository any user may write, so the agent runs as the unprivileged uid 1000 there; prebuilt images
        (SWE-bench / SWE-Gym: the testbed conda env on PATH) keep the image's own user, which they assume."""
        if self.grader == "r2e":  # R2E-Gym's PATH: the repository's venv first
            from rollgym.envs.swe.r2e import PATH

            return {"env": {"PATH": PATH}}
        if self.grader == "swesmith":  # the conda env SWE-smith's Python images test in; others keep the image's
            from rollgym.envs.swe.swesmith import PATH as SWESMITH_PATH
            from rollgym.envs.swe.swesmith import language

            return {"env": {"PATH": SWESMITH_PATH}} if language(self) == "python" else {}
        if self.grader == "swebench":  # the row's environment: what its eval script activates before the tests
            from rollgym.envs.swe.harness import environment_of

            return {"env": environment_of(self.eval_script or "")}
        if self.image_name and "sweb.eval" in self.image_name:
            return {
                "env": {
                    "PATH": "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin:/usr/local/sbin:"
                    "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                }
            }
        if self.image_name is None:
            return {"user": AGENT_USER, "env": {"HOME": "/tmp"}}
        return {}

    def test_files(self) -> list[str]:
        """The test files that hold the F2P and P2P tests (what the grader runs)."""
        files = {t.split("::", 1)[0] for t in self.FAIL_TO_PASS + self.PASS_TO_PASS}
        return sorted(files)


def swegym_image_name(instance_id: str, namespace: str = "xingyaoww") -> str:
    """The image SWE-Gym publishes for an instance (as OpenHands names it)."""
    return f"docker.io/{namespace}/sweb.eval.x86_64.{instance_id.replace('__', '_s_')}".lower() + ":latest"


def parse_tasks(source: str | Path | Iterable[dict[str, Any]]) -> list[SWETask]:
    """`SWETask`s (validated rows; `rollgym.load_tasks` gives plain rows for any environment) from a JSONL or Parquet
    file (a relative `env_spec.sdist` then resolves next to it), a `datasets` folder, an SWE-bench 5 task repo or task
    folder, or any iterable of rows (e.g. a Hugging Face `datasets.Dataset`)."""
    if isinstance(source, (str, Path)):
        from rollgym.envs.swe.task_folders import is_task_folder, read_task_folders

        if is_task_folder(source):
            rows = read_task_folders(source)
        else:
            rows = read_rows(source)
            rows = with_task_file(rows, source) if Path(source).is_file() else rows
    else:
        rows = [dict(row) for row in source]
    return [parse_task(row) for row in rows]


def with_task_file(rows: list[dict[str, Any]], path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows, each whose `env_spec.sdist` is relative noting the file it came from (`env_spec.task_file`), so
    the sdist is found next to that file from any working directory, in any process the row is sent to."""
    task_file = str(Path(path).absolute())
    out = []
    for row in rows:
        spec = row.get("env_spec") if isinstance(row, dict) else None
        if (
            isinstance(spec, dict)
            and isinstance(spec.get("sdist"), str)
            and not Path(spec["sdist"]).is_absolute()
            and not spec.get("task_file")
        ):
            row = {**row, "env_spec": {**spec, "task_file": task_file}}
        out.append(row)
    return out


def parse_task(row: dict[str, Any]) -> SWETask:
    """One row as an `SWETask`, its format told from its columns; `InvalidTaskError` saying which fields are wrong
    (`RowFormatError` for a row that mixes formats or lacks a column its format needs)."""
    if isinstance(row, SWETask):
        return row
    # a row rollgym already read (an SWETask dumped) keeps its format: its columns were completed from it
    fmt = row.get("row_format") if row.get("row_format") in get_args(RowFormat) else detect_format(row)
    if fmt == "swe-smith" and not row.get("bug_patch"):  # the profile's image and test command, the bug as state
        from rollgym.envs.swe.swesmith import as_task_row as swesmith_row

        row = swesmith_row(row)
    if fmt == "r2e-gym" and not row.get("image"):  # R2E-Gym's columns as an SWE task's
        from rollgym.envs.swe.r2e import as_task_row

        row = as_task_row(row)
    if fmt in ("swebench-legacy", "swe-gym") and not row.get("eval_script"):  # the script their harness release wrote
        from rollgym.envs.swe.legacy import as_swebench5

        row = as_swebench5(row, fmt)
    try:
        task = SWETask.model_validate({**row, "row_format": fmt})
    except ValidationError as exc:
        raise InvalidTaskError(f"not an SWE task row ({row.get('instance_id', '?')!r}): {exc}") from None
    for image in (task.image, task.image_name):
        if image:
            check_image_reference(image, task.instance_id)
    if task.grader == "swebench":
        from rollgym.envs.swe.harness import check_row

        check_row(task)
    return task


def load_bundled_tasks() -> list[SWETask]:
    """The SWE tasks that ship with rollgym (injected bugs in real PyPI projects)."""
    return [parse_task(row) for row in read_rows(BUNDLED_TASKS)]  # their sdists are in BUNDLED_SDISTS
