"""Importing τ²: quietly and offline (litellm reads its bundled model-price map instead of fetching it at import, and
τ²'s loguru logging is off unless the caller turns it on)."""

from __future__ import annotations

import functools
import os
from typing import Any


@functools.cache
def tau2_registry() -> Any:
    """τ²'s registry of domains (`tau2.registry.registry`), imported once."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from loguru import logger

    logger.disable("tau2")
    from tau2.registry import registry

    return registry
