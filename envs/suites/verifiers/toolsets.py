"""A verifiers `Toolset`'s `@vf.tool` methods as rollgym tools, called in rollgym's process.

verifiers serves a toolset as an MCP server and its harness calls it by name `<server_name>_<tool>`
(verifiers/v1/harnesses/utils/mcp.py, 0.4.0); the server runs each call with the rollout's state in a context
variable (`ServerBase._with_state`, verifiers/v1/mcp/server.py). rollgym calls the same methods, under the same
names, with the episode's trace state in that variable, and sends the result back as the tool message's text.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
from collections.abc import Callable
from typing import Any

from rollgym.envs.core import tool


class EpisodeState:
    """The state the running episode's tool calls read and write (the trace's `state`); set at each reset."""

    def __init__(self) -> None:
        self.current: Any = None


def tool_name(toolset: Any, method: Callable) -> str:
    """The name the model calls `method` by: verifiers' `<server_name>_<tool>`, bare when the server has no prefix."""
    name = getattr(method, "tool_name", None) or method.__name__
    return f"{toolset.server_name}_{name}" if toolset.server_name else name


def as_text(result: Any) -> str:
    """A tool's return value as the tool message text (MCP's text content: strings as they are, the rest as JSON)."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result)
    except TypeError:
        return str(result)


class _Bound:
    """One environment's toolset and episode state, the `self` of its tools' shared functions."""

    def __init__(self, toolset: Any, state: EpisodeState) -> None:
        self.toolset, self.state = toolset, state


@functools.cache
def _shared_tool(toolset_class: type, attr: str, name: str) -> Callable:
    """The rollgym tool function of one `@vf.tool` method, shared by every environment of the toolset class (so its
    schema is built once): the method's own signature and docstring, called on `self.toolset` with `self.state`."""
    from verifiers.v1.mcp.server import _call_state  # the variable ServerBase.state reads (verifiers 0.4.0)

    method = getattr(toolset_class, attr)

    @functools.wraps(method)
    async def call(self: _Bound, *args: Any, **kwargs: Any) -> str:
        token = _call_state.set(self.state.current)
        try:
            result = getattr(self.toolset, attr)(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        finally:
            _call_state.reset(token)
        return as_text(result)

    call.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]  # `self` and the method's arguments
    return tool(call, name=name, description=(method.__doc__ or "").strip())


def rollgym_tools(toolsets: list[Any], state: EpisodeState) -> list[Callable]:
    """One rollgym tool per `@vf.tool` method of `toolsets`, each run with `state.current` as verifiers' call state."""
    from verifiers.v1.utils.decorators import discover_decorated

    return [
        types.MethodType(_shared_tool(type(ts), method.__name__, tool_name(ts, method)), _Bound(ts, state))
        for ts in toolsets
        for method in discover_decorated(ts, "tool")
    ]
