"""τ²'s tasks as rollgym rows `{task_id, domain}`: the domain's own task file (its `base` split), looked up by id."""

from __future__ import annotations

import difflib
import functools
from typing import Any

from pydantic import BaseModel, ValidationError

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.suites.tau2.importing import tau2_registry


class Tau2Row(BaseModel):
    """One τ² task: its id in the domain's task file."""

    task_id: str
    domain: str


@functools.cache
def domain_tasks(domain: str) -> dict[str, Any]:
    """The domain's tasks (`tau2.data_model.tasks.Task`) by id, in τ²'s order, loaded once."""
    return {task.id: task for task in tau2_registry().get_tasks_loader(domain)()}


def task_rows(domain: str) -> list[dict[str, Any]]:
    """Every task of the domain as a row."""
    return [{"task_id": task_id, "domain": domain} for task_id in domain_tasks(domain)]


def parse_row(task: dict[str, Any], domain: str) -> Tau2Row:
    """The row of `task` for the environment of `domain`; a row naming another domain, or no task id, is refused."""
    named = task.get("domain", domain)
    if named != domain:
        raise InvalidTaskError(f"the task names τ² domain {named!r}, but this is the {domain!r} environment")
    try:
        return Tau2Row.model_validate({**task, "domain": domain})
    except ValidationError as exc:
        raise InvalidTaskError(f"a τ² task row ({domain}) needs a task_id: {exc}") from None


def task_of(row: Tau2Row) -> Any:
    """τ²'s `Task` the row names; an unknown id is an `InvalidTaskError` naming the closest ids."""
    tasks = domain_tasks(row.domain)
    task = tasks.get(row.task_id)
    if task is None:
        close = difflib.get_close_matches(row.task_id, list(tasks), n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise InvalidTaskError(
            f"τ²'s {row.domain} domain has no task {row.task_id!r}.{hint} It has {len(tasks)} tasks "
            f"({', '.join(list(tasks)[:5])}, ...)"
        )
    return task


def airline_rows() -> list[dict[str, Any]]:
    """`rg.load_tasks("tau2/airline")`: every airline task."""
    return task_rows("airline")


def retail_rows() -> list[dict[str, Any]]:
    """`rg.load_tasks("tau2/retail")`: every retail task."""
    return task_rows("retail")


def telecom_rows() -> list[dict[str, Any]]:
    """`rg.load_tasks("tau2/telecom")`: every telecom task (τ²'s `base` split)."""
    return task_rows("telecom")
