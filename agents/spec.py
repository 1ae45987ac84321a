"""What rollgym needs to know to run an agent CLI inside a task's sandbox: `AgentSpec` (one per agent) and `AgentRun`
(one run of it: where it works, its HOME, its session's URL as the container sees it, which prompt this is).

A spec says four things, and nothing about where the agent runs: where its install lives on this machine (mounted
read-only into the sandbox at the same path), the environment that points it at a base URL and keeps it offline,
the files it wants in its HOME, and its command line for a first prompt and for a follow-up in the same
conversation. `SandboxedAgent` (sandboxed.py) does the rest.
"""

from __future__ import annotations

import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.errors import UsageError


def agents_cache() -> Path:
    """Where `.ci/agents-up` installs the CLIs: `$ROLLGYM_CACHE/agents` (default `~/.cache/rollgym/agents`)."""
    return Path(os.environ.get("ROLLGYM_CACHE") or Path.home() / ".cache" / "rollgym") / "agents"


def own_python(prefix: str, why: str) -> str:
    """`prefix` (a Python install) when it is one of its own, which can be mounted into a sandbox at its own path;
    `UsageError` for the system's (`/usr`): mounted there, it would hide the image's own."""
    if prefix in ("/", "/usr", "/usr/local"):
        raise UsageError(
            f"{why}; agents in sandboxes need a Python of its own install (pyenv, uv python, conda), mounted into the "
            "sandbox at its own path"
        )
    return prefix


@dataclass
class AgentRun:
    """One run of an agent in its sandbox. Paths are the container's."""

    workdir: str
    home: str
    base_url: (
        str  # the session's OpenAI-style base URL as the agent reaches it: `http://127.0.0.1:PORT/sessions/{id}/v1`
    )
    api_key: str
    conversation: str = field(default_factory=lambda: str(uuid.uuid4()))
    turn: int = 0  # 0: the first prompt; 1, 2...: follow-ups through the CLI's own "continue" option
    outputs: list[str] = field(default_factory=list)
    task: Any = None  # the SWETask being solved (Aider adds the files it names to its chat)
    mcp_servers: tuple[Any, ...] = ()  # the environment's MCP servers (`MCPServerConfig`), for the agent's own config

    @property
    def session_root(self) -> str:
        """The session's URL without `/v1` (what Anthropic clients take as their base URL)."""
        return self.base_url.removesuffix("/v1")


class AgentSpec(ABC):
    """An agent CLI rollgym can run in a sandbox. Subclass it (see builtin/) and `register_agent` it to add one."""

    #: the name `--agent`, `agent_rollout_func` and `run_agents` take
    name: str
    #: the env var that may name the executable, and its path under `agents_cache()`
    env_var: str
    cache_path: str
    #: what installs it (said when it is missing)
    install: str
    #: files the agent writes inside the repository that are not part of its change
    ignore: Sequence[str] = ()
    #: whether its CLI has an MCP client: its `files`/`command` give it `run.mcp_servers` in its own configuration;
    #: an agent without one is refused on a task whose environment declares MCP servers (agents/mcp_config.py)
    mcp_client: bool = False

    def __init__(
        self,
        *,
        executable: str | None = None,
        model: str = "rollgym",
        max_output_tokens: int = 512,
        follow_ups: Sequence[str] = (),
        timeout_s: float = 900.0,
        system_prompt: str | None = None,
    ) -> None:
        self.executable_override = executable
        self.model, self.max_output_tokens, self.timeout_s = model, max_output_tokens, timeout_s
        self.follow_ups = list(follow_ups)
        self.system_prompt = system_prompt or (
            "You are a software engineer working in the current directory, a git "
            "repository. Fix the issue you are given by editing files with the shell. "
            "Be brief."
        )

    # --- where it is -------------------------------------------------------------------------------
    def executable(self) -> str:
        """The CLI on this machine (`executable=`, then `$<env_var>`, then `agents_cache()/<cache_path>`), resolved
        through symlinks; `UsageError` saying how to install it when there is none."""
        for cand in (self.executable_override, os.environ.get(self.env_var), str(agents_cache() / self.cache_path)):
            if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
                return str(Path(cand).resolve())
        raise UsageError(f"{self.name} is not installed: {self.install} (or set {self.env_var})")

    def host_paths(self) -> list[str]:
        """The folders of this machine the agent needs in its sandbox (read-only, same paths): its install."""
        exe = Path(self.executable())
        cache = agents_cache().resolve()
        return [str(cache)] if exe.is_relative_to(cache) else [str(exe.parent)]

    def venv_paths(self, venv: Path) -> list[str]:
        """A Python agent's folders: its venv (in the cache) and the Python install the venv runs on (`home` in
        `pyvenv.cfg`), which must not be the system's (`/usr`): mounted over the container's own, it would hide it."""
        home = next(
            (
                line.split("=", 1)[1].strip()
                for line in (venv / "pyvenv.cfg").read_text().splitlines()
                if "=" in line and line.split("=", 1)[0].strip() == "home"
            ),
            "",
        )
        prefix = own_python(str(Path(home).resolve().parent), f"{self.name}'s venv runs on the system Python ({home})")
        return [str(agents_cache().resolve()), prefix]

    # --- what it says ------------------------------------------------------------------------------
    def files(self, run: AgentRun) -> dict[str, str]:
        """Files to write before the first prompt, by path in the container (config in `run.home`)."""
        return {}

    @abstractmethod
    def environment(self, run: AgentRun) -> dict[str, str]:
        """Environment variables that point the CLI at the session and keep it offline and quiet."""

    @abstractmethod
    def command(self, run: AgentRun, prompt: str) -> list[str]:
        """The command line for `prompt`: the first one when `run.turn == 0`, else a follow-up that continues it."""

    def stdin(self, run: AgentRun, prompt: str) -> bytes:
        """What the CLI reads on stdin (nothing by default: a CLI waiting for input would hang)."""
        return b""

    def prompts(self, problem: str) -> list[str]:
        """The prompts of one run on a task: the issue, then the follow-ups."""
        return [problem, *self.follow_ups]
