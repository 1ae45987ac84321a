"""rollgym.envs: gymnasium environments for LLM agents, tools, and Docker sandboxes.

`import rollgym.envs` registers the built-in environments with gymnasium (`rollgym/Calculator-v0`,
`rollgym/SWE-v0`); `gymnasium.make("rollgym.envs:rollgym/SWE-v0")` imports and makes in one go.
Imports nothing else of rollgym's (not tokenization, not rollouts) but `rollgym.errors`, the error tree's root.
"""

from rollgym.envs.core import (
    ChatMessageSpace,
    ChatMessagesSpace,
    Env,
    EnvCheckError,
    InvalidTaskError,
    ResetInfo,
    StepInfo,
    Tool,
    ToolCallRecord,
    ToolSet,
    UnknownEnvironmentError,
    check_env,
    make,
    register_env,
    task_id_of,
    tool,
)

register_env("rollgym/Calculator-v0", "rollgym.envs.builtin.calculator:CalculatorEnv")
register_env("rollgym/SWE-v0", "rollgym.envs.swe.env:SWEEnv")

__all__ = [
    "ChatMessageSpace",
    "ChatMessagesSpace",
    "Env",
    "EnvCheckError",
    "InvalidTaskError",
    "ResetInfo",
    "StepInfo",
    "Tool",
    "ToolCallRecord",
    "ToolSet",
    "UnknownEnvironmentError",
    "check_env",
    "make",
    "register_env",
    "task_id_of",
    "tool",
]
