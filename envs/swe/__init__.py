"""The SWE environment: repository tasks in Docker sandboxes, graded in a fresh container."""

from .checkout import checkout_task, working_tree_diff
from .grading import GradeResult, grade_patch
from .images import build_task_images, ensure_task_image, task_image_name
from .task import EnvSpec, SWETask, load_bundled_tasks, load_tasks, swegym_image_name

__all__ = ["EnvSpec", "GradeResult", "SWETask", "build_task_images", "checkout_task", "ensure_task_image", "grade_patch",
           "load_bundled_tasks", "load_tasks", "swegym_image_name", "task_image_name",
           "working_tree_diff"]
