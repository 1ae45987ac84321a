"""rollgym: an agent-environment gym and token-exact rollout engine for RL on LLM agents.

    import rollgym as rg

    async with rg.Policy("smollm2-135m") as policy:
        rollout = await rg.rollout("rollgym/Calculator-v0", policy, limits=rg.Limits(max_turns=8))

The names below are the public API; they load on first use, so `import rollgym` stays light (no torch).
Layers (docs/concepts.md#layers): `rollgym.tokenization`, `rollgym.envs`, `rollgym.engines`, `rollgym.rollouts`.
"""

# Absolute imports only (everywhere in rollgym): test runners may import this file as a plain module (pytest
# imports a rootdir package's __init__.py), where a relative import has no parent package.
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rollgym.errors import (
    EngineError,
    EnvError,
    ProxyError,
    RollgymError,
    SandboxError,
    TokenizationError,
    UsageError,
    WorkerError,
)
from rollgym.version import __version__

#: public name -> module that defines it (imported on first access)
_LAZY = {
    # models and sampling
    "Policy": "rollgym.rollouts.core.policy",
    "model_dir": "rollgym.rollouts.core.policy",
    "Limits": "rollgym.limits",
    "SamplingParams": "rollgym.engines.base",
    "ChatTokenizer": "rollgym.tokenization",
    # environments
    "Env": "rollgym.envs",
    "tool": "rollgym.envs",
    "make": "rollgym.envs",
    "check_env": "rollgym.envs",
    "ResetInfo": "rollgym.envs",
    "StepInfo": "rollgym.envs",
    "ToolCallRecord": "rollgym.envs",
    "swe_reward": "rollgym.envs.swe",
    "trl_environment": "rollgym.envs.trl",
    "from_trl_environment": "rollgym.envs.trl",
    # rollouts and records
    "rollout": "rollgym.rollouts.core.loop",
    "run_rollouts": "rollgym.rollouts.core.batch",
    "generate": "rollgym.rollouts.core.generate",
    "load_tasks": "rollgym.rollouts.core.tasks",
    "Rollout": "rollgym.rollouts.core.records",
    "Turn": "rollgym.rollouts.core.records",
    "ErrorRecord": "rollgym.rollouts.core.records",
    "read_rollouts": "rollgym.rollouts.core.output",
    "is_infra_failure": "rollgym.rollouts.core.output",
    "summarize": "rollgym.rollouts.core.summary",
    "RunSummary": "rollgym.rollouts.core.summary",
    "write_viewer": "rollgym.rollouts.view",
    # agents
    "RecordingProxy": "rollgym.rollouts.proxy",
    "CommandAgent": "rollgym.rollouts.agents",
    "run_agents": "rollgym.rollouts.agents.run",
    "AgentSpec": "rollgym.rollouts.agents",
    "register_agent": "rollgym.rollouts.agents",
    # trainers
    "make_rollout_func": "rollgym.rollouts.integrations.trl",
    "agent_rollout_func": "rollgym.rollouts.integrations.trl",
    "policy_from_trainer": "rollgym.rollouts.integrations.trl",
    "env_reward": "rollgym.rollouts.integrations.trl",
    "component_reward": "rollgym.rollouts.integrations.trl",
    "patch_trl_for_vllm_cpu": "rollgym.rollouts.integrations.trl_vllm_cpu",
    # asynchronous RL (TRL's AsyncGRPOTrainer)
    "AsyncRolloutWorker": "rollgym.rollouts.integrations.trl_async.worker",
    "AsyncRolloutConfig": "rollgym.rollouts.integrations.trl_async.config",
    "VLLMServerWeightTransfer": "rollgym.rollouts.integrations.trl_async.weight_transfer",
    "WeightsVersion": "rollgym.engines.weights",
    "patch_async_grpo_for_cpu": "rollgym.rollouts.integrations.trl_async.cpu",
}
_RENAMED = {"register": ("rollgym.envs", "register_env")}

__all__ = [
    "AsyncRolloutConfig",
    "AsyncRolloutWorker",
    "ChatTokenizer",
    "EngineError",
    "Env",
    "EnvError",
    "ErrorRecord",
    "Limits",
    "Policy",
    "ProxyError",
    "RecordingProxy",
    "ResetInfo",
    "RollgymError",
    "Rollout",
    "RunSummary",
    "SamplingParams",
    "SandboxError",
    "StepInfo",
    "CommandAgent",
    "TokenizationError",
    "ToolCallRecord",
    "Turn",
    "UsageError",
    "VLLMServerWeightTransfer",
    "WeightsVersion",
    "WorkerError",
    "__version__",
    "agent_rollout_func",
    "AgentSpec",
    "register_agent",
    "check_env",
    "component_reward",
    "env_reward",
    "from_trl_environment",
    "generate",
    "is_infra_failure",
    "load_tasks",
    "make",
    "make_rollout_func",
    "model_dir",
    "patch_async_grpo_for_cpu",
    "patch_trl_for_vllm_cpu",
    "policy_from_trainer",
    "read_rollouts",
    "register",
    "rollout",
    "run_agents",
    "run_rollouts",
    "summarize",
    "swe_reward",
    "tool",
    "trl_environment",
    "write_viewer",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _RENAMED:
        module, attr = _RENAMED[name]
        value = getattr(importlib.import_module(module), attr)
    else:
        raise AttributeError(f"module 'rollgym' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names above load lazily
    from rollgym.engines.base import SamplingParams
    from rollgym.engines.weights import WeightsVersion
    from rollgym.envs import Env, ResetInfo, StepInfo, ToolCallRecord, check_env, make, tool
    from rollgym.envs import register_env as register
    from rollgym.envs.swe import swe_reward
    from rollgym.envs.trl import from_trl_environment, trl_environment
    from rollgym.limits import Limits
    from rollgym.rollouts.agents import AgentSpec, CommandAgent, register_agent
    from rollgym.rollouts.agents.run import run_agents
    from rollgym.rollouts.core.batch import run_rollouts
    from rollgym.rollouts.core.generate import generate
    from rollgym.rollouts.core.loop import rollout
    from rollgym.rollouts.core.output import is_infra_failure, read_rollouts
    from rollgym.rollouts.core.policy import Policy, model_dir
    from rollgym.rollouts.core.records import ErrorRecord, Rollout, Turn
    from rollgym.rollouts.core.summary import RunSummary, summarize
    from rollgym.rollouts.core.tasks import load_tasks
    from rollgym.rollouts.integrations.trl import (
        agent_rollout_func,
        component_reward,
        env_reward,
        make_rollout_func,
        policy_from_trainer,
    )
    from rollgym.rollouts.integrations.trl_async.config import AsyncRolloutConfig
    from rollgym.rollouts.integrations.trl_async.cpu import patch_async_grpo_for_cpu
    from rollgym.rollouts.integrations.trl_async.weight_transfer import VLLMServerWeightTransfer
    from rollgym.rollouts.integrations.trl_async.worker import AsyncRolloutWorker
    from rollgym.rollouts.integrations.trl_vllm_cpu import patch_trl_for_vllm_cpu
    from rollgym.rollouts.proxy import RecordingProxy
    from rollgym.rollouts.view import write_viewer
    from rollgym.tokenization import ChatTokenizer
