"""opencode (npm `opencode-ai`, tested with 1.18.33), through the proxy's Chat Completions route. A config file
(`OPENCODE_CONFIG`) declares the session as an `@ai-sdk/openai-compatible` provider. The default prompt is ~7.7k
tokens (10 tools); the `build` agent here keeps only `bash` and a short prompt (~1.6k tokens). The prompt goes on
stdin: a quoted argument with spaces would reach the model wrapped in literal quotes.

MCP: the environment's servers go in the same file's `mcp` entries (`{"type": "local", "command": [command, *args],
"environment", "cwd"}` or `{"type": "remote", "url", "headers", "oauth": false}`, opencode's `McpLocalConfig`/`McpRemoteConfig`;
`timeout` (ms) caps a call); their tools stay on when the build agent's other tools are off."""

from __future__ import annotations

import json
from typing import Any

from rollgym.agents.mcp_config import milliseconds
from rollgym.agents.spec import AgentRun, AgentSpec
from rollgym.envs.mcp.declaration import MCPServerConfig

#: opencode's tools other than bash, switched off for the build agent
OTHER_TOOLS = ("edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write")


def mcp_config(servers: tuple[MCPServerConfig, ...]) -> dict[str, Any]:
    """opencode's `mcp` config entries for `servers`."""
    entries: dict[str, Any] = {}
    for server in servers:
        if server.is_stdio:
            entry: dict[str, Any] = {"type": "local", "command": [server.command or "", *server.args]}
            entry.update({"environment": dict(server.env)} if server.env else {})
            entry.update({"cwd": server.cwd} if server.cwd else {})
        else:
            entry = {"type": "remote", "url": server.url, "oauth": False}  # rollgym gives no OAuth: none is tried
            entry.update({"headers": dict(server.headers)} if server.headers else {})
        entries[server.name] = {**entry, "enabled": True, "timeout": milliseconds(server.call_timeout_s)}
    return entries


class OpenCode(AgentSpec):
    name, env_var, install = "opencode", "ROLLGYM_OPENCODE", ".ci/agents-up (npm opencode-ai)"
    cache_path = "npm/node_modules/.bin/opencode"
    mcp_client = True

    def __init__(self, *, all_tools: bool = False, context: int = 8192, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.all_tools, self.context = all_tools, context

    def files(self, run: AgentRun) -> dict[str, str]:
        model = {
            "name": self.model,
            "tool_call": True,
            "limit": {"context": self.context, "output": self.max_output_tokens},
        }
        build = {
            "prompt": self.system_prompt,
            **({} if self.all_tools else {"tools": dict.fromkeys(OTHER_TOOLS, False)}),
        }
        config = {
            "$schema": "https://opencode.ai/config.json",
            "model": f"rollgym/{self.model}",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"*": "allow"},
            "agent": {"build": build},
            "provider": {
                "rollgym": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "rollgym",
                    "options": {"baseURL": run.base_url, "apiKey": run.api_key},
                    "models": {self.model: model},
                }
            },
        }
        if run.mcp_servers:
            config["mcp"] = mcp_config(run.mcp_servers)
        return {f"{run.home}/opencode.json": json.dumps(config, indent=2)}

    def environment(self, run: AgentRun) -> dict[str, str]:
        off = (
            "MODELS_FETCH",
            "AUTOUPDATE",
            "DEFAULT_PLUGINS",
            "LSP_DOWNLOAD",
            "SHARE",
            "CLAUDE_CODE",
            "EXTERNAL_SKILLS",
        )
        return {"OPENCODE_CONFIG": f"{run.home}/opencode.json", **{f"OPENCODE_DISABLE_{k}": "1" for k in off}}

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        # --title: no title-generation side request; -c: continue this HOME's last session
        return [
            self.executable(),
            "run",
            "--pure",
            "--title",
            "rollgym",
            "--format",
            "json",
            *(["-c"] if run.turn else []),
        ]

    def stdin(self, run: AgentRun, prompt: str) -> bytes:
        return prompt.encode()
