"""Task rows: JSONL and Hugging Face `datasets` loading, SWE-bench string lists, SWE-Gym image names."""

from __future__ import annotations

import json

import pytest

from rollgym.envs.core import InvalidTaskError
from rollgym.envs.swe import SWETask, load_bundled_tasks, parse_tasks, swegym_image_name
from rollgym.envs.swe.task import parse_task

ROW = {
    "instance_id": "o__r-1",
    "repo": "o/r",
    "base_commit": "a" * 40,
    "problem_statement": "p",
    "FAIL_TO_PASS": '["tests/test_a.py::test_x"]',
    "PASS_TO_PASS": '["tests/test_b.py::test_y", "tests/test_a.py::test_z"]',
    "image_name": swegym_image_name("getmoto__moto-1234"),
}


def test_jsonl_rows_with_json_string_lists(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROW) + "\n\n" + json.dumps({**ROW, "instance_id": "o__r-2", "extra_col": 5}) + "\n")
    tasks = parse_tasks(path)
    assert [t.instance_id for t in tasks] == ["o__r-1", "o__r-2"]
    assert tasks[0].FAIL_TO_PASS == ["tests/test_a.py::test_x"]
    assert tasks[0].test_files() == ["tests/test_a.py", "tests/test_b.py"]
    assert tasks[1].model_extra == {"extra_col": 5}


def test_malformed_jsonl_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        parse_tasks(path)


def test_hugging_face_dataset_rows():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list([ROW, {**ROW, "instance_id": "o__r-3"}])
    tasks = parse_tasks(ds)
    assert [t.instance_id for t in tasks] == ["o__r-1", "o__r-3"] and all(isinstance(t, SWETask) for t in tasks)


def test_swegym_images_are_used_as_published():
    assert swegym_image_name("getmoto__moto-1234") == "docker.io/xingyaoww/sweb.eval.x86_64.getmoto_s_moto-1234:latest"
    task = SWETask.model_validate(ROW)
    assert task.image_name == ROW["image_name"] and task.workdir == "/testbed"
    assert task.test_command.startswith("PATH=/opt/miniconda3/envs/testbed/bin:$PATH python -m pytest")
    assert task.default_sandbox()["env"]["PATH"].startswith("/opt/miniconda3/envs/testbed/bin:")
    assert "user" not in task.default_sandbox()  # a prebuilt image keeps the user it assumes
    assert load_bundled_tasks()[0].default_sandbox() == {"user": "1000:1000", "env": {"HOME": "/tmp"}}


def test_bundled_rows_round_trip():
    for task in load_bundled_tasks():
        again = SWETask.model_validate_json(task.model_dump_json())
        assert again == task


def test_a_relative_sdist_resolves_next_to_its_task_file_from_any_directory(tmp_path, monkeypatch):
    from support.swe import SDIST, authored_row, bundled, write_tasks

    from rollgym.envs.swe.images import sdist_path
    from rollgym.envs.swe.task import BUNDLED_SDISTS
    from rollgym.rollouts.tasks import load_tasks as load_rows

    path = write_tasks(tmp_path / "authored", authored_row())
    monkeypatch.chdir(tmp_path)  # elsewhere: not the file's directory
    (task,) = parse_tasks("authored/tasks.jsonl")
    assert sdist_path(task) == tmp_path / "authored" / SDIST
    assert task.env_spec.task_file == str(path) and task.env_spec.sdist == SDIST  # the row as written
    # The same through `rollgym generate`'s loader, which sends rows to environments as dicts:
    (row,) = load_rows("rollgym/SWE-v0", "authored/tasks.jsonl")
    assert sdist_path(SWETask.model_validate(row)) == tmp_path / "authored" / SDIST
    # Bundled rows keep their sdists in the package; an absolute path is used as given.
    assert sdist_path(bundled()) == BUNDLED_SDISTS / bundled().env_spec.sdist
    absolute = authored_row(env_spec={"sdist": str(tmp_path / "authored" / SDIST)})
    assert sdist_path(parse_task(absolute)) == tmp_path / "authored" / SDIST


def test_a_row_copied_from_the_bundled_file_still_finds_the_bundled_sdist(tmp_path):
    from support.swe import bundled

    from rollgym.envs.swe.images import sdist_path
    from rollgym.envs.swe.task import BUNDLED_SDISTS

    path = tmp_path / "copied.jsonl"
    path.write_text(bundled().model_dump_json() + "\n")
    assert sdist_path(parse_tasks(path)[0]) == BUNDLED_SDISTS / bundled().env_spec.sdist


def test_a_missing_sdist_is_one_line_naming_the_path_tried_and_the_task_file(tmp_path):
    from support.swe import authored_row

    from rollgym.envs.swe.errors import SdistNotFoundError
    from rollgym.envs.swe.images import task_image_name

    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(authored_row(env_spec={"sdist": "gone.tar.gz"})) + "\n")
    (task,) = parse_tasks(path)
    with pytest.raises(SdistNotFoundError) as info:
        task_image_name(task)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "gone.tar.gz") in message and f"task file {path}" in message
    assert isinstance(info.value, InvalidTaskError) and isinstance(info.value, FileNotFoundError)
