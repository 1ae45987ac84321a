"""A hook given as a callable or as a "module:name" string, imported on first use (as gymnasium entry points are), so
registering one imports nothing: the SWE and sandbox hooks load Docker's SDK only when a run needs them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: A callable, or where to import it from ("package.module:function").
EntryPoint = Callable[..., Any] | str


def load(entry_point: EntryPoint) -> Callable[..., Any]:
    """The callable an entry point names."""
    if callable(entry_point):
        return entry_point
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)
