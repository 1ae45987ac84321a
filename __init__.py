"""rollgym: an agent-environment gym and token-exact rollout engine for RL on LLM agents.

    import rollgym as rg

    async with rg.Policy("smollm2-135m") as policy:
        rollout = await rg.rollout("rollgym/Calculator-v0", policy, limits=rg.Limits(max_turns=8))

The names below are the public API; they load on first use, so `import rollgym` stays light (no torch).
Subpackages: `rollgym.tokenization`, `rollgym.envs`, `rollgym.rollouts`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

# Absolute imports only: test runners may import this file as a plain module (pytest imports a rootdir
# package's __init__.py), where a relative import has no parent package.
from rollgym.errors import (EngineError, EnvError, ProxyError, RollgymError, SandboxError, TokenizationError, UsageError,
                            WorkerError)

try:
    __version__ = version("rollgym")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

#: public name -> module that defines it (imported on first access)
_LAZY = {
    # models and sampling
    "Policy": "rollgym.rollouts.policy", "model_dir": "rollgym.rollouts.policy",
    "Limits": "rollgym.rollouts.limits", "SamplingParams": "rollgym.rollouts.engines.base",
    "ChatTokenizer": "rollgym.tokenization",
    # environments
    "Env": "rollgym.envs", "tool": "rollgym.envs", "make": "rollgym.envs", "check_env": "rollgym.envs",
    "ResetInfo": "rollgym.envs", "StepInfo": "rollgym.envs", "ToolCallRecord": "rollgym.envs",
    # rollouts and records
    "rollout": "rollgym.rollouts.loop", "run_rollouts": "rollgym.rollouts.batch",
    "generate": "rollgym.rollouts.generate", "load_tasks": "rollgym.rollouts.tasks",
    "Rollout": "rollgym.rollouts.records", "Turn": "rollgym.rollouts.records", "ErrorRecord": "rollgym.rollouts.records",
    "read_rollouts": "rollgym.rollouts.output", "summarize": "rollgym.rollouts.output",
    "is_infra_failure": "rollgym.rollouts.output",
    "write_viewer": "rollgym.rollouts.view",
    # trainers and agents
    "make_rollout_func": "rollgym.rollouts.trl", "env_reward": "rollgym.rollouts.trl",
    "component_reward": "rollgym.rollouts.trl", "patch_trl_for_vllm_cpu": "rollgym.rollouts.trl_vllm_cpu",
    "RecordingProxy": "rollgym.rollouts.proxy", "agent_rollout_func": "rollgym.rollouts.proxy",
    "SubprocessAgent": "rollgym.rollouts.proxy",
}
_RENAMED = {"register": ("rollgym.envs", "register_env")}

__all__ = sorted([*_LAZY, *_RENAMED, "EngineError", "EnvError", "ProxyError", "RollgymError", "SandboxError",
                  "TokenizationError", "UsageError", "WorkerError", "__version__"])


def __getattr__(name: str) -> Any:
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
    from rollgym.envs import Env, ResetInfo, StepInfo, ToolCallRecord, check_env, make, tool
    from rollgym.envs import register_env as register
    from rollgym.rollouts.batch import run_rollouts
    from rollgym.rollouts.engines.base import SamplingParams
    from rollgym.rollouts.generate import generate
    from rollgym.rollouts.limits import Limits
    from rollgym.rollouts.loop import rollout
    from rollgym.rollouts.output import is_infra_failure, read_rollouts, summarize
    from rollgym.rollouts.policy import Policy, model_dir
    from rollgym.rollouts.proxy import RecordingProxy, SubprocessAgent, agent_rollout_func
    from rollgym.rollouts.records import ErrorRecord, Rollout, Turn
    from rollgym.rollouts.tasks import load_tasks
    from rollgym.rollouts.trl import component_reward, env_reward, make_rollout_func
    from rollgym.rollouts.trl_vllm_cpu import patch_trl_for_vllm_cpu
    from rollgym.tokenization import ChatTokenizer
