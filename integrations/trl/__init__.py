"""Everything TRL, in one room (TRL 1.16): `rg.trl.<name>`.

- `make_rollout_func`, `agent_rollout_func`: `GRPOTrainer`'s `rollout_func` from rollgym's loop or a black-box agent;
  `env_reward`, `component_reward` its reward functions; `policy_from_trainer` a `Policy` over the trainer's model;
- `trl_environment`, `from_trl_environment`: TRL's `environment_factory` protocol, both ways;
- `AsyncRolloutWorker`, `AsyncRolloutConfig`, `VLLMServerWeightTransfer`: rollgym as `AsyncGRPOTrainer`'s rollout
  worker (`async_grpo/`);
- `cpu_vllm`, `cpu_async`: shims that let TRL's vLLM paths run on a CPU (tests and benchmarks; never needed on a GPU).

The names load on first use, so `rg.trl` imports neither TRL nor torch until one is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "make_rollout_func": "rollgym.integrations.trl.rollout_func",
    "agent_rollout_func": "rollgym.integrations.trl.rollout_func",
    "policy_from_trainer": "rollgym.integrations.trl.rollout_func",
    "env_reward": "rollgym.integrations.trl.rollout_func",
    "component_reward": "rollgym.integrations.trl.rollout_func",
    "to_trl_columns": "rollgym.integrations.trl.rollout_func",
    "trl_environment": "rollgym.integrations.trl.env_to_trl",
    "from_trl_environment": "rollgym.integrations.trl.env_from_trl",
    "AsyncRolloutWorker": "rollgym.integrations.trl.async_grpo.worker",
    "AsyncRolloutConfig": "rollgym.integrations.trl.async_grpo.config",
    "VLLMServerWeightTransfer": "rollgym.integrations.trl.async_grpo.weight_transfer",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """The TRL names, imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'rollgym.trl' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
