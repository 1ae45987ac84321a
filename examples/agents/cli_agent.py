"""What the agent examples share: an agent CLI run on a checkout of an SWE task, against one proxy session.

Each agent file (`claude_code.py`, `codex.py`, `opencode.py`, `mini_swe_agent.py`) says only how to point its
CLI at a session (environment, config files) and how to ask it one prompt or a follow-up in the same
conversation. This file runs it: an isolated HOME per rollout (no user config is read or written), the task's
repository checked out on the host (`rollgym.envs.swe.checkout_task`), the CLI as a subprocess with a time
limit, and the working tree's diff as the agent's output, graded by the SWE grader in Docker.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.envs.swe import SWETask, checkout_task, working_tree_diff
from rollgym.envs.swe.checkout import GIT_IDENTITY


def agents_cache() -> Path:
    """Where `.ci/agents-up` installs the CLIs: `$ROLLGYM_CACHE/agents` (default `~/.cache/rollgym/agents`)."""
    return Path(os.environ.get("ROLLGYM_CACHE") or Path.home() / ".cache" / "rollgym") / "agents"


@dataclass
class Run:
    """One agent run: where it works, its private HOME, its session, and which prompt of the conversation this is."""

    workdir: Path
    home: Path
    base_url: str  # the session's OpenAI-style base URL, `.../sessions/{id}/v1`
    api_key: str
    conversation: str = field(default_factory=lambda: str(uuid.uuid4()))
    turn: int = 0  # 0: the first prompt; 1, 2...: follow-ups through the CLI's own "continue" option
    outputs: list[str] = field(default_factory=list)

    @property
    def session_root(self) -> str:
        """The session's URL without `/v1` (what Anthropic clients take as their base URL)."""
        return self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url


class AgentFailed(RuntimeError):
    """The agent CLI exited non-zero or timed out; the message holds the end of its output."""


class CLIAgent(ABC):
    """An agent CLI as a rollgym agent: `await agent(row, base_url, api_key)` returns its diff on the row's task."""

    #: a short name, the env var that may name the executable, and its path under `agents_cache()`
    name: str
    env_var: str
    cache_path: str
    executable: str
    #: files the agent writes inside the repository that are not part of its change
    ignore: Sequence[str] = ()

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
        self.exe = executable or self.find()
        self.model, self.max_output_tokens, self.timeout_s = model, max_output_tokens, timeout_s
        self.follow_ups = list(follow_ups)
        self.system_prompt = system_prompt or (
            "You are a software engineer working in the current directory, a git "
            "repository. Fix the issue you are given by editing files with the shell. "
            "Be brief."
        )

    @classmethod
    def find(cls) -> str | None:
        """The CLI: `$ROLLGYM_<NAME>`, then where `.ci/agents-up` installs it, then PATH."""
        for cand in (os.environ.get(cls.env_var), str(agents_cache() / cls.cache_path), shutil.which(cls.executable)):
            if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
                return cand
        return None

    # --- what each agent says ---------------------------------------------------------------------
    def prepare(self, run: Run) -> None:  # noqa: B027 - an optional hook: most agents need no config files
        """Write the agent's config files into `run.home` (called once per run, before the first prompt)."""

    @abstractmethod
    def environment(self, run: Run) -> dict[str, str]:
        """Environment variables that point the CLI at the session and keep it offline and quiet."""

    @abstractmethod
    def command(self, run: Run, prompt: str) -> list[str]:
        """The command line for `prompt`: the first one when `run.turn == 0`, else a follow-up that continues it."""

    def stdin(self, run: Run, prompt: str) -> bytes:
        """What the CLI reads on stdin (nothing by default: a CLI waiting for input would hang)."""
        return b""

    # --- running ----------------------------------------------------------------------------------
    def base_env(self, run: Run) -> dict[str, str]:
        """A minimal environment: no provider keys or config of the user's leak into the agent."""
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE")}
        return {
            **keep,
            "HOME": str(run.home),
            "TERM": "dumb",
            "NO_COLOR": "1",
            "TMPDIR": str(run.home / "tmp"),
            **GIT_IDENTITY,
        }

    async def ask(self, run: Run, prompt: str) -> str:
        """Run the CLI once for `prompt` (a new conversation, or a follow-up), return its stdout."""
        if self.exe is None:
            raise AgentFailed(f"{self.name} is not installed: run .ci/agents-up, or set {self.env_var}")
        cmd = self.command(run, prompt)
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            cwd=run.workdir,
            env={**self.base_env(run), **self.environment(run)},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(self.stdin(run, prompt)), self.timeout_s)
        except BaseException:
            if proc.returncode is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the CLI and any command it started
                await proc.wait()
            raise
        text = out.decode(errors="replace")
        if proc.returncode != 0:
            raise AgentFailed(
                f"{self.name} exited with {proc.returncode}: {(text + err.decode(errors='replace'))[-2000:]}"
            )
        run.outputs.append(text)
        run.turn += 1
        return text

    async def converse(self, run: Run, prompts: Sequence[str]) -> list[str]:
        """The first prompt, then each follow-up in the same conversation; the CLI's output for each."""
        (run.home / "tmp").mkdir(parents=True, exist_ok=True)
        self.prepare(run)
        return [await self.ask(run, p) for p in prompts]

    def prompt_for(self, task: SWETask) -> str:
        return task.problem_statement

    async def __call__(self, row: dict, base_url: str, api_key: str | None) -> str:
        """The agent on a fresh checkout of the row's SWE task: its working-tree diff."""
        task = SWETask.model_validate(row)
        with tempfile.TemporaryDirectory(prefix=f"rollgym-{self.name}-") as tmp:
            repo = checkout_task(task, Path(tmp) / "src", ignore=self.ignore)
            run = Run(workdir=repo, home=Path(tmp) / "home", base_url=base_url, api_key=api_key or "rollgym")
            await self.converse(run, [self.prompt_for(task), *self.follow_ups])
            return working_tree_diff(repo)


def make_rollout_func(agent: CLIAgent, policy: Any = None, *, concurrency: int = 2, grade: bool = True, **kwargs: Any):
    """A TRL `rollout_func`: each prompt (a JSON SWE task row) is one run of `agent` on its own proxy session, the
    session's main segment is the rollout, the SWE grader's `resolved` its reward (without `policy`: the trainer's model)."""
    import rollgym as rg

    return rg.agent_rollout_func(
        agent, rg.swe_reward if grade else None, policy=policy, concurrency=concurrency, **kwargs
    )


def main(agent_cls: type[CLIAgent]) -> None:
    """`python examples/agents/<agent>.py`: the agent on bundled SWE tasks behind a recording proxy, rollouts to --out."""
    parser = argparse.ArgumentParser(description=f"{agent_cls.name} on bundled SWE tasks, through rollgym's proxy")
    parser.add_argument("--model", default="smollm2-135m", help="engine spec")
    parser.add_argument("--num-tasks", type=int, default=1, help="how many bundled SWE tasks")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per reply (the proxy's cap)")
    parser.add_argument("--out", default=f"runs/{agent_cls.name}", help="output directory (re-running resumes it)")
    parser.add_argument("--no-grade", action="store_true", help="skip grading (no Docker)")
    args = parser.parse_args()

    import rollgym as rg
    from rollgym.rollouts.proxy import ProxySettings

    summary = rg.run_agents(
        agent_cls(max_output_tokens=args.max_tokens),
        "bundled",
        args.model,
        out=args.out,
        num_tasks=args.num_tasks,
        reward=None if args.no_grade else rg.swe_reward,
        resume=True,
        settings=ProxySettings(default_max_tokens=args.max_tokens),
    )
    for rollout in rg.read_rollouts(f"{args.out}/rollouts.jsonl"):
        print(
            f"task {rollout.task_id}: {len(rollout.turns)} call(s), {sum(len(t.completion_ids) for t in rollout.turns)} "
            f"sampled tokens, reward {rollout.reward}, error {rollout.error}, segments {rollout.meta.get('segment_reasons')}"
        )
    print("reward mean", summary.reward_mean)
