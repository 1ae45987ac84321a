"""verifiers environments in rollgym's loop: `rg.make("verifiers/env-v0", environment=...)` runs a verifiers v1
taskset (its tasks, prompts, tools, stop conditions and rewards) with rollgym as the agent and model client, so
rollgym records every token. Importing this room imports no verifiers."""

from rollgym.envs.suites.verifiers.suite_id import ENV_ID, SUITE, register_verifiers

__all__ = ["ENV_ID", "SUITE", "register_verifiers"]
