"""verifiers (Prime Intellect's environment library, v1 API) as a rollgym suite: one id, `verifiers/env-v0`, made
with the verifiers environment to run; registered by name, so neither `import rollgym` nor the catalogue imports
verifiers."""

from __future__ import annotations

from rollgym.envs.core.suites import Suite, register_suite_env

SUITE = Suite(name="verifiers", package="verifiers", module="verifiers", extra="verifiers")
ENV_ID = "verifiers/env-v0"
ENTRY_POINT = "rollgym.envs.suites.verifiers.taskset_env:make_verifiers_env"


def register_verifiers() -> None:
    """Register `verifiers/env-v0` with gymnasium by entry point string."""
    register_suite_env(SUITE, ENV_ID, ENTRY_POINT)
