"""The BFCL categories rollgym catalogues (the four multi-turn ones), the ones it refuses and why, their environment
ids, and their registration: by name, so neither `import rollgym` nor listing the catalogue imports bfcl-eval."""

from __future__ import annotations

from rollgym.envs.core.errors import UnknownEnvironmentError
from rollgym.envs.core.registration import register_env
from rollgym.envs.core.suites import Suite, register_suite_env

#: the bfcl-eval release the categories, prompts and checker were read from (a test checks the installed one)
BFCL_VERSION = "2026.3.23"


class BFCLSuite(Suite):
    """bfcl-eval pins old versions of much of the scientific stack (numpy 1.26, filelock 3.20, ...) that its
    multi-turn code never imports, so it installs without its dependencies, beside the extra's few."""

    def install_hint(self) -> str:
        return f"pip install 'rollgym[{self.extra}]' && pip install --no-deps bfcl-eval=={BFCL_VERSION}"


SUITE = BFCLSuite(name="bfcl", package="bfcl-eval", module="bfcl_eval", extra="bfcl")
NAMESPACE = "bfcl"
ENTRY_POINT = "rollgym.envs.suites.bfcl.env:make_bfcl_env"
REFUSED_ENTRY_POINT = "rollgym.envs.suites.bfcl.categories:refuse"

#: BFCL's multi-turn categories (`bfcl_eval.constants.category_mapping.MULTI_TURN_CATEGORY`), 200 entries each
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")

_WEB = (
    "its WebSearchAPI backend searches Google through SerpAPI (an API key) and fetches the pages it finds over HTTP: "
    "it needs the live web, which an environment's tools may not reach from the host"
)
_MEMORY = (
    "its memory backend runs prerequisite conversations that write memory snapshots to files on the host, read back "
    "by the scored entries{extra}; an environment's tools keep no state on the host"
)
#: BFCL's agentic categories, which rollgym does not run, with the reason `make` gives
REFUSED = {
    "web_search_base": _WEB,
    "web_search_no_snippet": _WEB,
    "memory_kv": _MEMORY.format(extra=""),
    "memory_vector": _MEMORY.format(
        extra=", and it loads the sentence-transformers model all-MiniLM-L6-v2 from the Hugging Face Hub at import"
    ),
    "memory_rec_sum": _MEMORY.format(extra=""),
}


class RefusedCategoryError(UnknownEnvironmentError):
    """A BFCL category rollgym knows and does not run; the message says why."""


def env_id(category: str) -> str:
    """The environment id of a BFCL category: `bfcl/<category>-v0`."""
    return f"{NAMESPACE}/{category}-v0"


def refusal(category: str) -> str:
    """Why rollgym does not run `category`."""
    return f"BFCL's {category} category is not a rollgym environment: {REFUSED[category]}"


def refuse(category: str, **_kwargs: object) -> None:
    """gymnasium's entry point of a refused category's id: raises `RefusedCategoryError` with the reason."""
    raise RefusedCategoryError(f"{env_id(category)!r}: {refusal(category)}")


def register_categories() -> None:
    """Register the multi-turn categories' ids with gymnasium (catalogued), and the refused ones (not catalogued), so
    `make` of one of those says why instead of 'unknown id'."""
    for category in CATEGORIES:
        register_suite_env(SUITE, env_id(category), ENTRY_POINT, category=category)
    for category in REFUSED:
        register_env(env_id(category), REFUSED_ENTRY_POINT, category=category)
