"""Rollouts on disk: an append-only JSONL file that survives crashes, and resume keys (the summary: summary.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from rollgym.errors import UsageError
from rollgym.rollouts.records import Rollout


class OutputExistsError(UsageError, FileExistsError):
    """The output already holds rollouts and the run was not asked to resume."""


ROLLOUTS_FILE = "rollouts.jsonl"
SUMMARY_FILE = "summary.json"
#: Where `--resume` moves the infrastructure failures it runs again (kept, so no data is lost).
RETRIED_FILE = "retried.jsonl"
#: Error categories that are not the agent's doing (engine, sandbox, rollgym itself): a resumed run
#: runs them again. The agent's own failures, the environment's and timeouts are results, kept as they are.
INFRA_CATEGORIES = frozenset({"engine", "sandbox", "internal"})


def is_infra_failure(rollout: Rollout) -> bool:
    """The rollout failed for a reason that is not the policy's: retry it or drop it, never train on it."""
    return rollout.error is not None and rollout.error.category in INFRA_CATEGORIES


def read_rollouts(path: str | os.PathLike) -> Iterator[Rollout]:
    """Every complete rollout of a JSONL file (a torn last line from a crash is ignored)."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.endswith(b"\n"):
                yield Rollout.model_validate_json(line)


class RolloutWriter:
    """Appends one rollout per line and flushes it, so a crash never corrupts earlier lines.

    On resume with `retry_errors`, rollouts that failed on infrastructure are moved to `retried.jsonl`
    (the rewrite is atomic) so that they run again; `retried` counts them.
    """

    def __init__(self, out_dir: str | os.PathLike, resume: bool = False, retry_errors: bool = True) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / ROLLOUTS_FILE
        if self.path.exists() and not resume and self.path.stat().st_size:
            raise OutputExistsError(
                f"{self.path} already has rollouts: pass --resume to continue it, or choose another --out"
            )
        self._repair_tail()
        self.retried = self._set_aside_infra_failures() if retry_errors and self.path.exists() else 0
        self.done: set[tuple[str, int]] = {r.key for r in read_rollouts(self.path)} if self.path.exists() else set()
        self._fh = open(self.path, "ab")

    def _set_aside_infra_failures(self) -> int:
        """Move infrastructure failures to `retried.jsonl`, then rewrite the rollouts file without them."""
        keep, retry = [], []
        with open(self.path, "rb") as fh:
            for line in fh:
                (retry if is_infra_failure(Rollout.model_validate_json(line)) else keep).append(line)
        if not retry:
            return 0
        with open(self.dir / RETRIED_FILE, "ab") as fh:  # first: a crash between the steps loses nothing
            fh.writelines(retry)
            fh.flush()
            os.fsync(fh.fileno())
        tmp = self.path.with_suffix(".jsonl.tmp")
        with open(tmp, "wb") as fh:
            fh.writelines(keep)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        return len(retry)

    def _repair_tail(self) -> None:
        """Cut a partial last line (the process died mid-write) so appends start on a fresh line."""
        if not self.path.exists():
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)

    def write(self, rollout: Rollout) -> None:
        self._fh.write(rollout.to_json().encode() + b"\n")
        self._fh.flush()
        self.done.add(rollout.key)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
