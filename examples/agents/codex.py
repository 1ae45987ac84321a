"""Codex CLI (npm `@openai/codex`, tested with 0.169.0) as a rollgym agent, through the proxy's OpenAI Responses
route (`{session}/v1/responses`; this version refuses `wire_api = "chat"`).

Everything is set with `-c` flags (no config file): a provider whose base URL is the session, and the switches
that stop Codex reaching GitHub, ChatGPT and its plugin registry. `model_instructions_file` replaces the ~17 KB
base prompt, and the `include_*` switches drop the environment and permissions messages, so the prompt is
~1.3k tokens (most of it the tool schemas).

    .ci/agents-up                                    # or: npm install -g @openai/codex
    python examples/agents/codex.py --no-grade       # one bundled SWE task, SmolLM2
"""

from __future__ import annotations

import json

from cli_agent import CLIAgent, Run, main


class Codex(CLIAgent):
    name, env_var, executable = "codex", "ROLLGYM_CODEX", "codex"
    cache_path = "npm/node_modules/.bin/codex"

    def prepare(self, run: Run) -> None:
        (run.home / "codex").mkdir(parents=True, exist_ok=True)
        (run.home / "instructions.md").write_text(self.system_prompt + "\n")

    def environment(self, run: Run) -> dict[str, str]:
        return {"CODEX_HOME": str(run.home / "codex"), "ROLLGYM_API_KEY": run.api_key}

    def command(self, run: Run, prompt: str) -> list[str]:
        provider = (
            f'{{name="rollgym",base_url={json.dumps(run.base_url)},wire_api="responses",'
            f'env_key="ROLLGYM_API_KEY",request_max_retries=1,stream_max_retries=1}}'
        )
        settings = {
            "model_provider": "rollgym",
            "model_providers.rollgym": provider,
            "model_instructions_file": json.dumps(str(run.home / "instructions.md")),
            "model_context_window": "8192",
            "check_for_update_on_startup": "false",
            "analytics.enabled": "false",
            "feedback.enabled": "false",
            "features.plugins": "false",
            "features.apps": "false",
            "features.goals": "false",
            "features.multi_agent": "false",
            "skills.bundled.enabled": "false",
            "web_search": '"disabled"',
            "include_permissions_instructions": "false",
            "include_apps_instructions": "false",
            "include_collaboration_mode_instructions": "false",
            "include_environment_context": "false",
        }
        flags = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        resume = ["resume", "--last"] if run.turn else []  # the newest conversation in this run's CODEX_HOME
        return [
            self.exe,
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-m",
            self.model,
            *flags,
            *resume,
            prompt,
        ]


def make_codex_rollout_func(policy=None, **kwargs):
    """A TRL `rollout_func` whose rollouts are Codex sessions on SWE tasks, rewarded by the SWE grader."""
    from cli_agent import make_rollout_func

    return make_rollout_func(Codex(), policy, **kwargs)


if __name__ == "__main__":
    main(Codex)
