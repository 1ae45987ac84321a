"""BFCL's multi-turn categories (bfcl-eval) as rollgym environments: `bfcl/<category>-v0`, one BFCL entry per task,
its backends' functions as tools run by BFCL's own in-memory backends, the user's turns delivered one after another,
scored by BFCL's own `multi_turn_checker`. Importing this room imports no bfcl-eval."""

from rollgym.envs.suites.bfcl.categories import (
    BFCL_VERSION,
    CATEGORIES,
    REFUSED,
    SUITE,
    RefusedCategoryError,
    env_id,
    register_categories,
)

__all__ = ["BFCL_VERSION", "CATEGORIES", "REFUSED", "SUITE", "RefusedCategoryError", "env_id", "register_categories"]
