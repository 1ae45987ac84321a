"""The environment API: `Env`, the `@tool` decorator, chat-message spaces, and registration."""

from rollgym.envs.core.checker import check_env
from rollgym.envs.core.env import Env, ResetInfo, StepInfo
from rollgym.envs.core.errors import (
    EnvCheckError,
    EpisodeStateError,
    InvalidActionError,
    InvalidReplyError,
    InvalidRewardError,
    InvalidTaskError,
    ScorerError,
    UnknownEnvironmentError,
)
from rollgym.envs.core.registration import make, register_env, suggest
from rollgym.envs.core.spaces import (
    ChatMessageSpace,
    ChatMessagesSpace,
    action_space,
    message_problem,
    observation_space,
)
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.core.tools import Tool, ToolCallRecord, ToolSet, tool

__all__ = [
    "ChatMessageSpace",
    "ChatMessagesSpace",
    "Env",
    "EnvCheckError",
    "EpisodeStateError",
    "InvalidActionError",
    "InvalidReplyError",
    "InvalidRewardError",
    "InvalidTaskError",
    "ResetInfo",
    "ScorerError",
    "StepInfo",
    "Tool",
    "ToolCallRecord",
    "ToolSet",
    "UnknownEnvironmentError",
    "action_space",
    "check_env",
    "make",
    "message_problem",
    "observation_space",
    "register_env",
    "suggest",
    "task_id_of",
    "tool",
]
