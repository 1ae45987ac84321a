"""Agent CLIs run inside their task's sandbox, reaching only their own proxy session (docs/agents.md).

AgentSpec        what rollgym needs to know to run an agent CLI (subclass it, then `register_agent`)
AgentRun         one run of it: workdir, HOME, the session's URL as the sandbox sees it
SandboxedAgent   the spec's CLI on a task row, in the row's sandbox: `await agent(row, base_url, api_key)`
AGENTS           the built-in agents by name: claude-code, codex, opencode, mini-swe-agent, aider
"""

from rollgym.agents.catalog import AGENTS, agent_spec, as_agent, register_agent
from rollgym.agents.command import CommandAgent
from rollgym.agents.sandboxed import AgentDiff, AgentFailed, AgentTimedOut, SandboxedAgent
from rollgym.agents.spec import AgentRun, AgentSpec, agents_cache

__all__ = [
    "AGENTS",
    "AgentDiff",
    "AgentFailed",
    "AgentRun",
    "AgentSpec",
    "AgentTimedOut",
    "CommandAgent",
    "SandboxedAgent",
    "agent_spec",
    "agents_cache",
    "as_agent",
    "register_agent",
]
