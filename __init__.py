"""rollgym: an agent-environment gym and token-exact rollout engine for RL on LLM agents.

    import rollgym as rg

    async with rg.Policy("smollm2-135m") as policy:
        rollout = await rg.rollout("rollgym/Calculator-v0", policy, limits=rg.Limits(max_turns=8))

The names below are the public API; they load on first use, so `import rollgym` stays light (no torch).
Layers (docs/concepts.md#layers): cli > integrations (`rg.trl`, Ray, export) > agents > proxy | view > rollouts >
engines | envs | tokenization > the root (errors, limits, models, version).
"""

# Absolute imports only (everywhere in rollgym): test runners may import this file as a plain module (pytest
# imports a rootdir package's __init__.py), where a relative import has no parent package.
from __future__ import annotations

import importlib
import warnings
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

#: public name -> module that defines it (imported on first use)
_LAZY = {
    # models and sampling
    "Policy": "rollgym.rollouts.policy",
    "model_dir": "rollgym.rollouts.policy",
    "Limits": "rollgym.limits",
    "SamplingParams": "rollgym.engines.base",
    "ChatTokenizer": "rollgym.tokenization",
    "WeightsVersion": "rollgym.engines.weights",
    # environments
    "Env": "rollgym.envs",
    "tool": "rollgym.envs",
    "make": "rollgym.envs",
    "check_env": "rollgym.envs",
    "ResetInfo": "rollgym.envs",
    "StepInfo": "rollgym.envs",
    "ToolCallRecord": "rollgym.envs",
    "swe_reward": "rollgym.envs.swe",
    # rollouts and records
    "rollout": "rollgym.rollouts.loop",
    "run_rollouts": "rollgym.rollouts.batch",
    "generate": "rollgym.rollouts.generate",
    "load_tasks": "rollgym.rollouts.tasks",
    "Rollout": "rollgym.rollouts.records",
    "Turn": "rollgym.rollouts.records",
    "ErrorRecord": "rollgym.rollouts.records",
    "read_rollouts": "rollgym.rollouts.output",
    "is_infra_failure": "rollgym.rollouts.output",
    "summarize": "rollgym.rollouts.summary",
    "RunSummary": "rollgym.rollouts.summary",
    "write_viewer": "rollgym.view",
    # agents
    "RecordingProxy": "rollgym.proxy",
    "CommandAgent": "rollgym.agents",
    "run_agents": "rollgym.agents.run",
    "AgentSpec": "rollgym.agents",
    "register_agent": "rollgym.agents",
    # trainers: TRL's rollout_func here; everything else TRL is `rg.trl.<name>`
    "make_rollout_func": "rollgym.integrations.trl.rollout_func",
}
#: public subpackages, imported on first use: `rg.trl.make_rollout_func`, ...
_SUBPACKAGES = {"trl": "rollgym.integrations.trl"}
_RENAMED = {"register": ("rollgym.envs", "register_env")}
#: old front-door names tied to one trainer: they still work, with a DeprecationWarning naming their new home
_MOVED = {
    **{
        name: f"rollgym.trl.{name}"
        for name in (
            "agent_rollout_func",
            "policy_from_trainer",
            "env_reward",
            "component_reward",
            "trl_environment",
            "from_trl_environment",
            "AsyncRolloutWorker",
            "AsyncRolloutConfig",
            "VLLMServerWeightTransfer",
        )
    },
    "patch_trl_for_vllm_cpu": "rollgym.integrations.trl.cpu_vllm.patch_trl_for_vllm_cpu",
    "patch_async_grpo_for_cpu": "rollgym.integrations.trl.cpu_async.patch_async_grpo_for_cpu",
}

__all__ = [
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
    "WeightsVersion",
    "WorkerError",
    "__version__",
    "AgentSpec",
    "register_agent",
    "check_env",
    "generate",
    "is_infra_failure",
    "load_tasks",
    "make",
    "make_rollout_func",
    "model_dir",
    "read_rollouts",
    "register",
    "rollout",
    "run_agents",
    "run_rollouts",
    "summarize",
    "swe_reward",
    "tool",
    "trl",
    "write_viewer",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use; a moved name warns once per use and names its new home."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(_SUBPACKAGES[name])
    elif name in _RENAMED:
        module, attr = _RENAMED[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _MOVED:
        new = _MOVED[name]
        warnings.warn(
            f"rollgym.{name} moved: use {new} (the old name will be removed)", DeprecationWarning, stacklevel=2
        )
        module = "rollgym.integrations.trl" if new.startswith("rollgym.trl.") else new.rpartition(".")[0]
        return getattr(importlib.import_module(module), name)  # not cached: every use of the old name warns
    else:
        raise AttributeError(f"module 'rollgym' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names above load lazily
    from rollgym.agents import AgentSpec, CommandAgent, register_agent
    from rollgym.agents.run import run_agents
    from rollgym.engines.base import SamplingParams
    from rollgym.engines.weights import WeightsVersion
    from rollgym.envs import Env, ResetInfo, StepInfo, ToolCallRecord, check_env, make, tool
    from rollgym.envs import register_env as register
    from rollgym.envs.swe import swe_reward
    from rollgym.integrations import trl
    from rollgym.integrations.trl.rollout_func import make_rollout_func
    from rollgym.limits import Limits
    from rollgym.proxy import RecordingProxy
    from rollgym.rollouts.batch import run_rollouts
    from rollgym.rollouts.generate import generate
    from rollgym.rollouts.loop import rollout
    from rollgym.rollouts.output import is_infra_failure, read_rollouts
    from rollgym.rollouts.policy import Policy, model_dir
    from rollgym.rollouts.records import ErrorRecord, Rollout, Turn
    from rollgym.rollouts.summary import RunSummary, summarize
    from rollgym.rollouts.tasks import load_tasks
    from rollgym.tokenization import ChatTokenizer
    from rollgym.view import write_viewer
