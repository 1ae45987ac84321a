"""Aider (PyPI `aider-chat`), scripted as its docs describe (https://aider.chat/docs/scripting.html): `--message` does
one instruction and exits, `--yes-always` answers confirmations, `--no-auto-commits` leaves the edits as a
working-tree diff. It reaches the proxy as an OpenAI-compatible endpoint (model `openai/<name>` with
`--openai-api-base`), with `--edit-format` set (small models cannot follow "diff" reliably). The files added to the
chat are those the task's gold patch touches (SWE-bench's "oracle" retrieval), so it needs no repository map. A
follow-up continues the conversation through `--restore-chat-history` (the run's chat history file). It has no MCP
client: it is refused on a task whose environment declares MCP servers (agents/mcp_config.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rollgym.agents.spec import AgentRun, AgentSpec
from rollgym.envs.swe.diffs import diff_paths


class Aider(AgentSpec):
    name, env_var, install = "aider", "ROLLGYM_AIDER", ".ci/agents-up (PyPI aider-chat)"
    cache_path = "aider-venv/bin/aider"
    ignore = (".aider*",)

    def __init__(self, *, edit_format: str = "whole", map_tokens: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.edit_format, self.map_tokens = edit_format, map_tokens

    def host_paths(self) -> list[str]:
        return self.venv_paths(Path(self.executable()).parents[1])

    def environment(self, run: AgentRun) -> dict[str, str]:
        return {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_CHECK_UPDATE": "false"}

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        files = sorted(diff_paths(run.task.patch)) if run.task is not None else []
        history = [f"--chat-history-file={run.home}/chat.md", f"--input-history-file={run.home}/input"]
        history.append(f"--llm-history-file={run.home}/llm.log")
        switches = ["--no-auto-commits", "--no-dirty-commits", "--no-suggest-shell-commands", "--yes-always"]
        switches += ["--no-check-update", "--no-analytics", "--no-show-model-warnings", "--no-gitignore"]
        switches += ["--no-pretty", "--no-fancy-input", "--no-auto-lint", "--no-auto-test", "--no-detect-urls"]
        switches += [
            "--restore-chat-history" if run.turn else "--no-restore-chat-history",  # a follow-up continues the chat
            "--map-tokens",
            str(self.map_tokens),
            "--edit-format",
            self.edit_format,
        ]
        model = ["--model", f"openai/{self.model}", "--openai-api-base", run.base_url, "--openai-api-key", run.api_key]
        return [self.executable(), *history, *model, *switches, "--message", prompt, *files]
