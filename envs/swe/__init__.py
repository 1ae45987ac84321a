"""The SWE environment: repository tasks in Docker sandboxes, graded in a fresh container."""

from rollgym.envs.swe.checkout import checkout_task, working_tree_diff
from rollgym.envs.swe.grading import GradeResult, GradingInfraError, grade_patch, swe_reward
from rollgym.envs.swe.images import build_task_images, ensure_task_image, task_image_name
from rollgym.envs.swe.task import ImageRecipe, SWETask, load_bundled_tasks, parse_tasks, swegym_image_name

__all__ = [
    "GradeResult",
    "GradingInfraError",
    "ImageRecipe",
    "SWETask",
    "build_task_images",
    "checkout_task",
    "ensure_task_image",
    "grade_patch",
    "load_bundled_tasks",
    "parse_tasks",
    "swegym_image_name",
    "task_image_name",
    "swe_reward",
    "working_tree_diff",
]
