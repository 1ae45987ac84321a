"""Claude Code (npm `@anthropic-ai/claude-code`, tested with 2.1.197), through the proxy's Anthropic Messages route
(`{session}/v1/messages`). Its default prompt is ~20k tokens (24 tools and a long system prompt): more than a small
model's context; `--bare --tools Bash --system-prompt ...` brings it to ~700. As root it refuses
`--dangerously-skip-permissions` unless IS_SANDBOX=1 (it is, here); the DISABLE/NONESSENTIAL variables stop every
request that is not to the proxy.

MCP: the environment's servers go in a `--mcp-config` file (`{"mcpServers": {NAME: {"type": "stdio", "command",
"args", "env"} | {"type": "http", "url", "headers"}}}`, the shape `claude mcp add -s project` writes) with
`--strict-mcp-config`; `alwaysLoad` makes the first request wait for their tools, `timeout` (ms) caps a call and
`MCP_TIMEOUT` (ms) a server's start. The config has no working directory: a server's `cwd` is a `cd` through `sh`."""

from __future__ import annotations

import json
from typing import Any

from rollgym.agents.mcp_config import in_cwd, milliseconds
from rollgym.agents.spec import AgentRun, AgentSpec
from rollgym.envs.mcp.declaration import MCPServerConfig


def mcp_config(servers: tuple[MCPServerConfig, ...]) -> dict[str, Any]:
    """Claude Code's MCP config (the JSON `--mcp-config` reads) for `servers`."""
    entries: dict[str, Any] = {}
    for server in servers:
        if server.is_stdio:
            command, args = in_cwd(server)
            entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
            if server.env:
                entry["env"] = dict(server.env)
        else:
            entry = {"type": "http", "url": server.url}
            if server.headers:
                entry["headers"] = dict(server.headers)
        entries[server.name] = {**entry, "timeout": milliseconds(server.call_timeout_s), "alwaysLoad": True}
    return {"mcpServers": entries}


class ClaudeCode(AgentSpec):
    name, env_var, install = "claude-code", "ROLLGYM_CLAUDE", ".ci/agents-up (npm @anthropic-ai/claude-code)"
    cache_path = "npm/node_modules/.bin/claude"
    mcp_client = True

    def __init__(self, *, bare: bool = True, tools: str = "Bash", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bare, self.tools = bare, tools

    def files(self, run: AgentRun) -> dict[str, str]:
        return {f"{run.home}/mcp.json": json.dumps(mcp_config(run.mcp_servers), indent=2)} if run.mcp_servers else {}

    def environment(self, run: AgentRun) -> dict[str, str]:
        starts = [milliseconds(s.start_timeout_s) for s in run.mcp_servers]
        return {
            **({"MCP_TIMEOUT": str(max(starts))} if starts else {}),
            "ANTHROPIC_BASE_URL": run.session_root,  # the SDK appends /v1/messages
            "ANTHROPIC_AUTH_TOKEN": run.api_key,  # sent as `Authorization: Bearer`
            "IS_SANDBOX": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no title-generation side request
            "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",  # no per-version billing block in the system prompt
            "MAX_THINKING_TOKENS": "0",
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(self.max_output_tokens),
        }

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        bare = ["--bare", "--tools", self.tools, "--system-prompt", self.system_prompt] if self.bare else []
        conversation = ["--session-id", run.conversation] if run.turn == 0 else ["--resume", run.conversation]
        head = [self.executable(), "-p", prompt, *bare, "--dangerously-skip-permissions", "--model", self.model]
        mcp = ["--mcp-config", f"{run.home}/mcp.json", "--strict-mcp-config"] if run.mcp_servers else []
        return [*head, *mcp, "--output-format", "json", *conversation]
