"""TRL's environment protocol, as `GRPOTrainer` and `AsyncGRPOTrainer` read an environment (TRL 1.16,
`trl/trainer/grpo_trainer.py` and `trl/experimental/async_grpo/async_rollout_worker.py`, the same code in both):

- `environment_factory()` makes an instance; the trainer lists the functions of its *class*
  (`inspect.getmembers(type(instance), inspect.isfunction)`): `reset` is required, `get_reward` is optional, every
  other name not starting with `_` is a tool, its JSON schema made from its signature and Google-style docstring
  (transformers' `get_json_schema`: a type hint and an `Args:` line for every argument);
- `reset(**row)` starts an episode with the dataset row's columns and returns None or a string, which the trainer
  appends to the last message of the row's `prompt`;
- a tool is called as `method(**arguments)` (sync or async); what it returns is the tool message's content, and an
  exception becomes `{"error": str(exc)}`;
- `get_reward()`, when defined, scores the episode from the environment's state once the model stops calling tools.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

RESERVED = ("reset", "get_reward")


def tool_names(cls: type) -> list[str]:
    """The tool methods TRL finds on an environment class, in TRL's order (alphabetical, from `getmembers`)."""
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in RESERVED and not name.startswith("_")
    ]


def tool_methods(instance: Any) -> list[Callable]:
    """The bound tool methods of an environment instance, as TRL calls them."""
    return [getattr(instance, name) for name in tool_names(type(instance))]


def with_observation(prompt: Any, observation: str | None) -> list[dict]:
    """The first messages of an episode as TRL builds them: the row's `prompt` (messages, or a plain string as a
    user message, or none), `reset()`'s observation appended to the last message's text."""
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(m) for m in (prompt or [])] or [{"role": "user", "content": ""}]
    if observation:
        messages[-1]["content"] = str(messages[-1].get("content") or "") + observation
    return messages
