"""τ²-bench's domains (airline, retail, telecom) as multi-turn tool environments `tau2/<domain>-v0`: τ²'s own tasks,
tools, user simulator (driven by a user model the caller chooses) and evaluation. Importing this room imports no τ²."""

from rollgym.envs.suites.tau2.domains import DOMAINS, SUITE, env_id, register_domains

__all__ = ["DOMAINS", "SUITE", "env_id", "register_domains"]
