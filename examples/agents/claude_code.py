"""Claude Code (npm `@anthropic-ai/claude-code`, tested with 2.1.197) as a rollgym agent, through the proxy's
Anthropic Messages route (`{session}/v1/messages`).

Claude Code's default prompt is ~20k tokens (24 tools and a long system prompt): more than a small model's context.
`--bare --tools Bash --system-prompt ...` brings it to ~700. It refuses `--dangerously-skip-permissions` as root
unless IS_SANDBOX=1; the four DISABLE/NONESSENTIAL variables stop every request that is not to the proxy.

    .ci/agents-up                                        # or: npm install -g @anthropic-ai/claude-code
    python examples/agents/claude_code.py --no-grade     # one bundled SWE task, SmolLM2
"""

from __future__ import annotations

from cli_agent import CLIAgent, Run, main


class ClaudeCode(CLIAgent):
    name, env_var, executable = "claude-code", "ROLLGYM_CLAUDE", "claude"
    cache_path = "npm/node_modules/.bin/claude"

    def __init__(self, *, bare: bool = True, tools: str = "Bash", **kwargs) -> None:
        super().__init__(**kwargs)
        self.bare, self.tools = bare, tools

    def environment(self, run: Run) -> dict[str, str]:
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

    def command(self, run: Run, prompt: str) -> list[str]:
        bare = ["--bare", "--tools", self.tools, "--system-prompt", self.system_prompt] if self.bare else []
        conversation = ["--session-id", run.conversation] if run.turn == 0 else ["--resume", run.conversation]
        return [
            self.exe,
            "-p",
            prompt,
            *bare,
            "--dangerously-skip-permissions",
            "--model",
            self.model,
            "--output-format",
            "json",
            *conversation,
        ]


def make_claude_code_rollout_func(policy=None, **kwargs):
    """A TRL `rollout_func` whose rollouts are Claude Code sessions on SWE tasks, rewarded by the SWE grader."""
    from cli_agent import make_rollout_func

    return make_rollout_func(ClaudeCode(), policy, **kwargs)


if __name__ == "__main__":
    main(ClaudeCode)
