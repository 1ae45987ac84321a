"""Claude Code (npm `@anthropic-ai/claude-code`, tested with 2.1.197), through the proxy's Anthropic Messages route
(`{session}/v1/messages`). Its default prompt is ~20k tokens (24 tools and a long system prompt): more than a small
model's context; `--bare --tools Bash --system-prompt ...` brings it to ~700. As root it refuses
`--dangerously-skip-permissions` unless IS_SANDBOX=1 (it is, here); the DISABLE/NONESSENTIAL variables stop every
request that is not to the proxy."""

from __future__ import annotations

from typing import Any

from rollgym.agents.spec import AgentRun, AgentSpec


class ClaudeCode(AgentSpec):
    name, env_var, install = "claude-code", "ROLLGYM_CLAUDE", ".ci/agents-up (npm @anthropic-ai/claude-code)"
    cache_path = "npm/node_modules/.bin/claude"

    def __init__(self, *, bare: bool = True, tools: str = "Bash", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bare, self.tools = bare, tools

    def environment(self, run: AgentRun) -> dict[str, str]:
        return {
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
        return [*head, "--output-format", "json", *conversation]
