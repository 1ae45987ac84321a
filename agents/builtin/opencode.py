"""opencode (npm `opencode-ai`, tested with 1.18.33), through the proxy's Chat Completions route. A config file
(`OPENCODE_CONFIG`) declares the session as an `@ai-sdk/openai-compatible` provider. The default prompt is ~7.7k
tokens (10 tools); the `build` agent here keeps only `bash` and a short prompt (~1.6k tokens). The prompt goes on
stdin: a quoted argument with spaces would reach the model wrapped in literal quotes."""

from __future__ import annotations

import json
from typing import Any

from rollgym.agents.spec import AgentRun, AgentSpec

#: opencode's tools other than bash, switched off for the build agent
OTHER_TOOLS = ("edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write")


class OpenCode(AgentSpec):
    name, env_var, install = "opencode", "ROLLGYM_OPENCODE", ".ci/agents-up (npm opencode-ai)"
    cache_path = "npm/node_modules/.bin/opencode"

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
