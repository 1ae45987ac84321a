"""A recording OpenAI-compatible proxy: black-box agents talk to `/sessions/{id}/v1`, rollgym records
token-exact trajectories (exact ids and logprobs per call, one `Rollout` per segment)."""

from .agent import SubprocessAgent, agent_rollout_func, run_agents
from .app import create_app
from .errors import APIError, ProxyError
from .server import RecordingProxy
from .service import ProxyCore
from .session import ProxySession
from .store import ProxySettings

__all__ = ["APIError", "ProxyCore", "ProxyError", "ProxySession", "ProxySettings", "RecordingProxy", "SubprocessAgent",
           "agent_rollout_func", "create_app", "run_agents"]
