"""mini-swe-agent (PyPI `mini-swe-agent`, tested with 2.4.6, with `mcp`), through the proxy's Chat Completions route
(LiteLLM's `openai/` provider, not streaming). It has no "continue" option: one run is one conversation, a call per
step until the task is submitted or `step_limit` is reached. `textbased=True` reads the command from a fenced code
block instead of a `bash` tool call, which small models manage more often. A reply without a valid action is dropped
from mini's history (a format-error message replaces it): the proxy records the next call as a new segment. It has
no MCP client (the `mcp` package beside it is LiteLLM's import): it is refused on a task that declares MCP servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollgym.agents.spec import AgentRun, AgentSpec

#: any fenced block, with or without a language (mini's own text mode wants ```mswea_bash_command)
LENIENT_ACTION = r"```(?:mswea_bash_command|bash|sh)?\s*\n(.*?)\n```"


class MiniSweAgent(AgentSpec):
    name, env_var, install = "mini-swe-agent", "ROLLGYM_MINI", ".ci/agents-up (PyPI mini-swe-agent, mcp)"
    cache_path = "mini-venv/bin/mini"

    def __init__(
        self,
        *,
        step_limit: int = 20,
        textbased: bool = False,
        temperature: float | None = None,
        short_prompts: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.step_limit, self.textbased, self.temperature = step_limit, textbased, temperature
        self.short_prompts = short_prompts

    def host_paths(self) -> list[str]:
        return self.venv_paths(Path(self.executable()).parents[1])

    def files(self, run: AgentRun) -> dict[str, str]:
        model: dict = {"model_kwargs": {"api_base": run.base_url, "max_tokens": self.max_output_tokens}}
        if self.temperature is not None:
            model["model_kwargs"]["temperature"] = self.temperature
        if self.textbased:
            model["action_regex"] = LENIENT_ACTION
        agent: dict = {"step_limit": self.step_limit}
        if self.short_prompts:  # mini's own templates are ~800 tokens of workflow advice
            agent.update(system_template=self.system_prompt, instance_template="{{task}}")
        config = {"agent": agent, "model": model, "environment": {"cwd": run.workdir}}
        return {f"{run.home}/rollgym.yaml": json.dumps(config)}  # JSON is YAML

    def environment(self, run: AgentRun) -> dict[str, str]:
        return {
            "OPENAI_API_KEY": run.api_key,
            "MSWEA_CONFIGURED": "true",  # no first-run wizard
            "MSWEA_COST_TRACKING": "ignore_errors",  # an unknown model has no price: do not abort
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # LiteLLM's bundled model map, not GitHub's
        }

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        if run.turn:
            raise ValueError("mini-swe-agent has no continue option: one run is one conversation")
        mode = (
            ["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased"]
            if self.textbased
            else ["-c", "mini.yaml"]
        )
        head = [self.executable(), "-y", "--exit-immediately", "-m", f"openai/{self.model}", "-t", prompt, *mode]
        return [*head, "-c", f"{run.home}/rollgym.yaml", "-o", f"{run.home}/trajectory.json"]
