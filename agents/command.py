"""`CommandAgent`: any program that speaks the OpenAI API, as an agent run inside its task's sandbox (what
`SubprocessAgent` did on the host before agents moved into sandboxes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.agents.spec import AgentRun, AgentSpec


class CommandAgent(AgentSpec):
    """`argv` run in the task's sandbox with `OPENAI_BASE_URL` / `OPENAI_API_BASE` / `OPENAI_API_KEY` set to its own
    session (the openai client and LiteLLM read them) and the task row as JSON on stdin. `argv[0]` is a program the
    image has, or one under `host_paths` (folders of this machine, mounted read-only at the same paths)."""

    name, env_var, cache_path = "command", "-", "-"
    install = "nothing to install: the program is in the image, or under host_paths"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        host_paths: Sequence[str] = (),
        env: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.argv, self.paths, self.env = list(argv), list(host_paths), dict(env or {})

    def executable(self) -> str:
        return self.argv[0]  # a path in the sandbox: nothing to find on this machine

    def host_paths(self) -> list[str]:
        return list(self.paths)

    def environment(self, run: AgentRun) -> dict[str, str]:
        endpoint = {"OPENAI_BASE_URL": run.base_url, "OPENAI_API_BASE": run.base_url, "OPENAI_API_KEY": run.api_key}
        return {**self.env, **endpoint}

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        return list(self.argv)

    def stdin(self, run: AgentRun, prompt: str) -> bytes:
        return (run.task.model_dump_json() if run.task is not None else "{}").encode()
