"""opencode (npm `opencode-ai`, tested with 1.18.33) as a rollgym agent, through the proxy's Chat Completions route.

A config file (`OPENCODE_CONFIG`) declares the session as an `@ai-sdk/openai-compatible` provider. The default
prompt is ~7.7k tokens (10 tools); the `build` agent here keeps only `bash` and a short prompt (~1.6k tokens).
The prompt goes on stdin: a quoted argument with spaces would reach the model wrapped in literal quotes.

    .ci/agents-up                                      # or: npm install -g opencode-ai
    python examples/agents/opencode.py --no-grade      # one bundled SWE task, SmolLM2
"""

from __future__ import annotations

import json

from cli_agent import CLIAgent, Run, main

#: opencode's tools other than bash, switched off for the build agent
OTHER_TOOLS = ("edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write")


class OpenCode(CLIAgent):
    name, env_var, executable = "opencode", "ROLLGYM_OPENCODE", "opencode"
    cache_path = "npm/node_modules/.bin/opencode"

    def __init__(self, *, all_tools: bool = False, context: int = 8192, **kwargs) -> None:
        super().__init__(**kwargs)
        self.all_tools, self.context = all_tools, context

    def prepare(self, run: Run) -> None:
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
        (run.home / "opencode.json").write_text(json.dumps(config, indent=2))

    def environment(self, run: Run) -> dict[str, str]:
        off = (
            "MODELS_FETCH",
            "AUTOUPDATE",
            "DEFAULT_PLUGINS",
            "LSP_DOWNLOAD",
            "SHARE",
            "CLAUDE_CODE",
            "EXTERNAL_SKILLS",
        )
        return {"OPENCODE_CONFIG": str(run.home / "opencode.json"), **{f"OPENCODE_DISABLE_{k}": "1" for k in off}}

    def command(self, run: Run, prompt: str) -> list[str]:
        # --title: no title-generation side request; -c: continue this HOME's last session
        return [self.exe, "run", "--pure", "--title", "rollgym", "--format", "json", *(["-c"] if run.turn else [])]

    def stdin(self, run: Run, prompt: str) -> bytes:
        return prompt.encode()


def make_opencode_rollout_func(policy=None, **kwargs):
    """A TRL `rollout_func` whose rollouts are opencode sessions on SWE tasks, rewarded by the SWE grader."""
    from cli_agent import make_rollout_func

    return make_rollout_func(OpenCode(), policy, **kwargs)


if __name__ == "__main__":
    main(OpenCode)
