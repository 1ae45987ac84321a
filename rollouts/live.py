"""The rollout a task is running, visible while it runs to whoever started the task.

A caller that may stop rollouts before they end (an asynchronous trainer's worker stopping, or restarting a rollout
that went stale) keeps what each had done: it runs the rollout in a task that `watch`es a list, and the loop
`publish`es its `Rollout` there as soon as it exists (turns are appended to it as they end). A context variable, so
it reaches the loop through any executor that runs the job in the caller's task, with no new parameter on the way.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

_WATCHER: ContextVar[list[Any] | None] = ContextVar("rollgym_live_rollout", default=None)


def watch(holder: list[Any] | None = None) -> list[Any]:
    """In the task about to run a rollout (and its subtasks): the list (`holder`, or a new one) the rollout will be
    published to."""
    holder = [] if holder is None else holder
    _WATCHER.set(holder)
    return holder


def publish(rollout: Any) -> None:
    """Called by the loop with each rollout it starts; a no-op unless the running task watches."""
    holder = _WATCHER.get()
    if holder is not None:
        holder.append(rollout)
