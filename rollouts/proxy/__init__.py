"""A recording OpenAI-compatible proxy: black-box agents talk to `/sessions/{id}/v1`, rollgym records
token-exact trajectories (exact ids and logprobs per call, one `Rollout` per segment)."""

from rollgym.rollouts.proxy.agent import agent_rollouts, run_agents
from rollgym.rollouts.proxy.app import create_app
from rollgym.rollouts.proxy.errors import APIError, ProxyError
from rollgym.rollouts.proxy.server import RecordingProxy
from rollgym.rollouts.proxy.service import ProxyCore
from rollgym.rollouts.proxy.session import ProxySession
from rollgym.rollouts.proxy.store import ProxySettings

__all__ = [
    "APIError",
    "ProxyCore",
    "ProxyError",
    "ProxySession",
    "ProxySettings",
    "RecordingProxy",
    "agent_rollouts",
    "create_app",
    "run_agents",
]
