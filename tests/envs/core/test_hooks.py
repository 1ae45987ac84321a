"""The rollout core reads tasks and records runs through hooks the environments register: the SWE tasks' sources
(`bundled`, task folders, files with relative sdists) and the record of the sandboxes a run starts."""

from __future__ import annotations

import contextlib
import json

import pytest

import rollgym.envs  # noqa: F401 - registers the built-in hooks
from rollgym.envs.core import run_records as run_records_module
from rollgym.envs.core import task_sources
from rollgym.envs.core.run_records import register_run_recorder, run_records
from rollgym.envs.core.task_sources import read_task_source, register_task_reader, register_task_source


def test_bundled_names_the_swe_tasks_through_the_source_swe_registers():
    from rollgym.envs.swe.task import load_bundled_tasks

    rows = read_task_source("bundled")
    assert rows == [t.model_dump(mode="json") for t in load_bundled_tasks()] and rows


def test_a_registered_reader_answers_first_and_the_plain_reader_reads_what_it_declines(tmp_path, monkeypatch):
    monkeypatch.setattr(task_sources, "_READERS", [])  # the SWE reader reads every file: only ours here
    monkeypatch.setattr(task_sources, "_NAMED", dict(task_sources._NAMED))
    (tmp_path / "plain.jsonl").write_text(json.dumps({"task_id": "a"}) + "\n")
    (tmp_path / "mine.txt").write_text("x")
    register_task_source("three", lambda: [{"task_id": str(i)} for i in range(3)])
    register_task_reader(lambda path: [{"task_id": "mine"}] if str(path).endswith(".txt") else None)
    assert [r["task_id"] for r in read_task_source("three")] == ["0", "1", "2"]
    assert read_task_source(tmp_path / "mine.txt") == [{"task_id": "mine"}]
    assert read_task_source(tmp_path / "plain.jsonl") == [{"task_id": "a"}]  # declined: the plain reader's
    with pytest.raises(FileNotFoundError, match="no tasks at"):
        read_task_source(tmp_path / "nothing.jsonl")


def test_a_run_enters_every_registered_recorder_and_the_sandbox_record_is_one(tmp_path, monkeypatch):
    from rollgym.envs.sandbox.record import RecordFile, current, record_path

    entered: list = []

    @contextlib.contextmanager
    def recorder(out):
        entered.append(out)
        yield
        entered.append("left")

    monkeypatch.setattr(run_records_module, "_RECORDERS", list(run_records_module._RECORDERS))
    register_run_recorder(recorder)
    assert current() is None
    with run_records(str(tmp_path)):
        sink = current()  # the sandboxes started here are written to the run folder's record
        assert isinstance(sink, RecordFile) and sink.path == record_path(tmp_path)
        assert entered == [tmp_path]
    assert entered == [tmp_path, "left"] and current() is None
