"""Harbor task folders (Terminal-Bench 2.0's format) as a sandboxed environment, graded by Harbor's rules."""

from rollgym.envs.harbor.config import HarborTaskConfig
from rollgym.envs.harbor.folders import HarborTask, harbor_rows, parse_harbor_task, read_task
from rollgym.envs.harbor.verifier import HarborGrade, verify

__all__ = ["HarborGrade", "HarborTask", "HarborTaskConfig", "harbor_rows", "parse_harbor_task", "read_task", "verify"]
