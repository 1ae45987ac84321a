"""mini-swe-agent (PyPI `mini-swe-agent`, tested with 2.4.6, with `mcp`) as a rollgym agent, through the proxy's
Chat Completions route (LiteLLM's `openai/` provider, not streaming).

mini has no "continue" option: one run is one conversation, and it makes a call per step until the task is
submitted or `step_limit` is reached. Its default mode asks for a `bash` tool call each step; `textbased=True`
reads the command from a fenced code block instead, which small models manage more often. A reply without a
valid action is dropped from mini's history (a format-error message replaces it), so the proxy records the next
call as a new segment: "history rewritten".

    .ci/agents-up                                            # or: pip install mini-swe-agent mcp
    python examples/agents/mini_swe_agent.py --no-grade      # one bundled SWE task, SmolLM2
"""

from __future__ import annotations

import json

from cli_agent import CLIAgent, Run, main

#: any fenced block, with or without a language (mini's own text mode wants ```mswea_bash_command)
LENIENT_ACTION = r"```(?:mswea_bash_command|bash|sh)?\s*\n(.*?)\n```"


class MiniSweAgent(CLIAgent):
    name, env_var, executable = "mini-swe-agent", "ROLLGYM_MINI", "mini"
    cache_path = "mini-venv/bin/mini"

    def __init__(
        self,
        *,
        step_limit: int = 20,
        textbased: bool = False,
        temperature: float | None = None,
        short_prompts: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.step_limit, self.textbased, self.temperature, self.short_prompts = (
            step_limit,
            textbased,
            temperature,
            short_prompts,
        )

    def prepare(self, run: Run) -> None:
        model: dict = {"model_kwargs": {"api_base": run.base_url, "max_tokens": self.max_output_tokens}}
        if self.temperature is not None:
            model["model_kwargs"]["temperature"] = self.temperature
        if self.textbased:
            model["action_regex"] = LENIENT_ACTION
        agent: dict = {"step_limit": self.step_limit}
        if self.short_prompts:  # mini's own templates are ~800 tokens of workflow advice
            agent.update(system_template=self.system_prompt, instance_template="{{task}}")
        config = {"agent": agent, "model": model, "environment": {"cwd": str(run.workdir)}}
        (run.home / "rollgym.yaml").write_text(json.dumps(config))  # JSON is YAML

    def environment(self, run: Run) -> dict[str, str]:
        return {
            "OPENAI_API_KEY": run.api_key,
            "MSWEA_CONFIGURED": "true",  # no first-run wizard
            "MSWEA_COST_TRACKING": "ignore_errors",  # an unknown model has no price: do not abort
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }  # LiteLLM's bundled model map, not GitHub's

    def command(self, run: Run, prompt: str) -> list[str]:
        if run.turn:
            raise ValueError("mini-swe-agent has no continue option: one run is one conversation")
        base = (
            ["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased"]
            if self.textbased
            else ["-c", "mini.yaml"]
        )
        return [
            self.exe,
            "-y",
            "--exit-immediately",
            "-m",
            f"openai/{self.model}",
            "-t",
            prompt,
            *base,
            "-c",
            str(run.home / "rollgym.yaml"),
            "-o",
            str(run.home / "trajectory.json"),
        ]


def make_mini_swe_agent_rollout_func(policy=None, **kwargs):
    """A TRL `rollout_func` whose rollouts are mini-swe-agent runs on SWE tasks, rewarded by the SWE grader."""
    from cli_agent import make_rollout_func

    return make_rollout_func(MiniSweAgent(), policy, **kwargs)


if __name__ == "__main__":
    main(MiniSweAgent)
