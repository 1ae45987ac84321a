"""A recording OpenAI-compatible proxy: black-box agents talk to `/sessions/{id}/v1`, rollgym records
token-exact trajectories (exact ids and logprobs per call, one `Rollout` per segment)."""

from rollgym.proxy.agent import AgentJobs, agent_rollouts
from rollgym.proxy.app import create_app
from rollgym.proxy.error_responses import APIError, ProxyError
from rollgym.proxy.server import RecordingProxy
from rollgym.proxy.service import ProxyCore
from rollgym.proxy.session import ProxySession
from rollgym.proxy.store import ProxySettings

__all__ = [
    "APIError",
    "AgentJobs",
    "ProxyCore",
    "ProxyError",
    "ProxySession",
    "ProxySettings",
    "RecordingProxy",
    "agent_rollouts",
    "create_app",
]
