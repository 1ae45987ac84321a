"""The environment API: `Env`, the `@tool` decorator, chat-message spaces, and registration."""

from .checker import check_env
from .env import Env, ResetInfo, StepInfo
from .errors import (EnvCheckError, EpisodeStateError, InvalidActionError, InvalidReplyError, InvalidRewardError,
                     InvalidTaskError, UnknownEnvironmentError)
from .registry import make, register_env, suggest
from .spaces import ChatMessageSpace, ChatMessagesSpace, action_space, message_problem, observation_space
from .tasks import task_id_of
from .tools import Tool, ToolCallRecord, ToolSet, tool

__all__ = [
    "ChatMessageSpace", "ChatMessagesSpace", "Env", "EnvCheckError", "EpisodeStateError", "InvalidActionError",
    "InvalidReplyError", "InvalidRewardError", "InvalidTaskError", "ResetInfo", "StepInfo", "Tool", "ToolCallRecord",
    "ToolSet", "UnknownEnvironmentError", "action_space", "check_env", "make", "message_problem", "observation_space",
    "register_env", "suggest", "task_id_of", "tool",
]
