"""Authoring a task rollgym does not bundle: a wrong base_commit is one line giving the right commit."""

from __future__ import annotations

import pytest
from swe_support import authored_row, bundled, write_tasks

from rollgym.envs.swe import ensure_task_image, load_tasks
from rollgym.envs.swe.base_commit import check_image
from rollgym.envs.swe.errors import WrongBaseCommitError

pytestmark = pytest.mark.docker

RIGHT = bundled().base_commit


def test_a_wrong_base_commit_is_one_line_with_the_right_commit(base_image, tmp_path):
    (task,) = load_tasks(write_tasks(tmp_path, authored_row(base_commit="abc123")))
    with pytest.raises(WrongBaseCommitError) as info:
        ensure_task_image(task, log=lambda _m: None)
    assert str(info.value) == (f"task authored__ordinal-teens: base_commit abc123 is not the commit the image build "
                               f"makes; its HEAD is {RIGHT} - set base_commit to that")
    assert info.value.head == RIGHT


def test_a_prebuilt_image_without_the_base_commit_is_one_line_with_its_head(base_image):
    image = ensure_task_image(bundled(), log=lambda _m: None)
    task = bundled().model_copy(update={"image_name": image, "env_spec": None, "base_commit": "f" * 40})
    with pytest.raises(WrongBaseCommitError, match=f"^task {task.instance_id}: base_commit f{{40}} is not in the "
                       f"repository; its HEAD is {RIGHT} - set base_commit to that$"):
        check_image(task, image)
    check_image(bundled().model_copy(update={"image_name": image, "env_spec": None}), image)  # the right one passes
