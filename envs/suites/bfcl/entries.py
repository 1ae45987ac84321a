"""BFCL's multi-turn entries and their ground truth, loaded by BFCL's own loaders (function docs filled in, held-out
functions moved aside, as `bfcl_eval.utils.load_dataset_entry` prepares them) once per category; a task row names
one entry by its BFCL id."""

from __future__ import annotations

import copy
import difflib
import functools
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.suites.bfcl.categories import CATEGORIES, REFUSED, refusal


class BFCLEntry(BaseModel):
    """One BFCL multi-turn entry as BFCL's loader prepares it, with its ground truth (one list of calls per turn)."""

    model_config = ConfigDict(extra="allow")

    id: str
    question: list[list[dict[str, Any]]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    function: list[dict[str, Any]]
    missed_function: dict[str, list[dict[str, Any]]] = {}
    ground_truth: list[list[str]]

    @property
    def category(self) -> str:
        """BFCL's category of the entry (its id less the index), as BFCL's checker derives it."""
        return self.id.rsplit("_", 1)[0]

    def checker_entry(self) -> dict[str, Any]:
        """The entry as BFCL's `multi_turn_checker` reads it (a fresh copy: BFCL's code may change it)."""
        return copy.deepcopy(self.model_dump(exclude={"ground_truth"}))


class BFCLRow(BaseModel):
    """A task row: the BFCL id of an entry (`task_id`, or BFCL's own `id`, so BFCL's data lines are rows too)."""

    model_config = ConfigDict(extra="ignore")

    task_id: str

    @model_validator(mode="before")
    @classmethod
    def _bfcl_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("task_id") and data.get("id"):
            return {**data, "task_id": data["id"]}
        return data


def bfcl_project_root() -> Path:
    """Where bfcl-eval keeps its lock files and result folders (`BFCL_PROJECT_ROOT`): rollgym's cache, not the
    folder above the installed package that bfcl-eval defaults to."""
    return Path(os.environ.get("ROLLGYM_CACHE") or Path.home() / ".cache" / "rollgym") / "bfcl"


def bfcl_utils() -> Any:
    """`bfcl_eval.utils`, imported with `BFCL_PROJECT_ROOT` set (unless the caller set it): importing it creates
    bfcl-eval's result, score and lock folders there."""
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(bfcl_project_root()))
    import bfcl_eval.utils

    return bfcl_eval.utils


@functools.cache
def category_entries(category: str) -> dict[str, BFCLEntry]:
    """The category's entries by id, in BFCL's order, each with its ground truth (loaded once per process)."""
    utils = bfcl_utils()
    entries = utils.load_dataset_entry(category)
    truths = {row["id"]: row["ground_truth"] for row in utils.load_ground_truth_entry(category)}
    return {entry["id"]: BFCLEntry.model_validate({**entry, "ground_truth": truths[entry["id"]]}) for entry in entries}


def entry_of(row: BFCLRow, category: str) -> BFCLEntry:
    """The entry a row names, or an `InvalidTaskError` saying why not: another category's id (a refused one with the
    reason), or an id the category does not have (with the closest ones)."""
    task_id = row.task_id
    named = task_id.rsplit("_", 1)[0]
    if named in REFUSED:
        raise InvalidTaskError(f"task {task_id!r}: {refusal(named)}")
    if named != category and named in CATEGORIES:
        raise InvalidTaskError(
            f"task {task_id!r} is a {named} entry, but this is the bfcl/{category}-v0 environment: use bfcl/{named}-v0"
        )
    entries = category_entries(category)
    if task_id not in entries:
        close = difflib.get_close_matches(task_id, list(entries), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise InvalidTaskError(
            f"BFCL's {category} has no entry {task_id!r}.{hint} Its ids run from {category}_0 to "
            f"{category}_{len(entries) - 1}"
        )
    return entries[task_id]


def default_rows(category: str, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` rows of the category (at most all of its entries) in BFCL's order, starting at entry `seed` (wrapping)."""
    ids = list(category_entries(category))
    count = min(max(n, 0), len(ids))
    return [{"task_id": ids[(seed + i) % len(ids)]} for i in range(count)]
