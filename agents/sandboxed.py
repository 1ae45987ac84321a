"""`SandboxedAgent`: an agent CLI run inside its task's sandbox, reaching nothing but its own proxy session.

Per run: the task's sandbox as its environment starts it (any environment with a sandbox: `rollgym.envs.SandboxedEnv`;
`rollgym/SWE-v0` by default: the row's image, workdir, user and environment, its prepared state, the sandbox's limits;
no network; the environment's MCP servers, if it declares any, are given to the agent in its own MCP configuration and
run in the sandbox as the agent starts them: agents/mcp_config.py), with three read-only mounts: the agent's install
and the Python it runs on (same paths as on this machine, so venvs and symlinks resolve), rollgym's relay script, and
a folder holding the Unix socket of a `SessionGateway` for this run's session only. Inside, `forward.py` listens on
the container's loopback and starts the agent, whose base URL is `http://127.0.0.1:PORT/sessions/{id}/v1`. After the
last prompt the agent's diff is read inside the container, with the environment's rules (oversized or binary changes
are refused as `patch_failed`), and handed to the reward, which grades it in a fresh container.
"""

from __future__ import annotations

import shlex
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

from rollgym.agents.gateway import SessionGateway
from rollgym.agents.mcp_config import servers_for_agent
from rollgym.agents.spec import AgentRun, AgentSpec, own_python
from rollgym.envs import AgentWorkspace, make, sandboxed_env_class
from rollgym.envs.core.wrappers import inner_env
from rollgym.envs.sandbox import SandboxMount
from rollgym.envs.swe.checkout import GIT_IDENTITY
from rollgym.errors import ProxyError, UsageError

SOCKET_DIR = "/run/rollgym-proxy"
SUPPORT_DIR = "/opt/rollgym-agent"
FORWARD = Path(__file__).with_name("forward.py")
PORT = 4010  # on the container's own loopback


class AgentFailed(ProxyError):
    """The agent exited with an error in its sandbox; the message holds the end of its output."""

    category = "agent"


class AgentTimedOut(AgentFailed):
    """The agent did not finish within its time limit; it and everything it started were killed."""

    category = "timeout"


class AgentDiff(BaseModel):
    """What an agent run leaves: its diff against the task's base (read in its sandbox), or why it is refused; and,
    when it was graded in its environment, the environment's reward."""

    diff: str = ""
    refused: str | None = None  # the change is the agent's and not graded (oversized, binary): `patch_failed`
    outputs: list[str] = []
    reward: float | None = None
    reward_components: dict[str, float] = {}

    def __str__(self) -> str:
        return self.refused or self.diff


def environment_reward(row: dict, output: Any, rollout: object = None) -> tuple[float, dict[str, float]]:
    """The reward of an agent run graded in its environment (`SandboxedAgent(grade=True)`): the environment's own."""
    reward = getattr(output, "reward", None)
    if reward is None:
        raise UsageError("the agent's run was not graded in its environment (SandboxedAgent(grade=True) grades it)")
    return float(reward), dict(output.reward_components)


def python_runtime() -> str:
    """This machine's Python install (the one rollgym runs on), mounted for the relay; not the system's."""
    prefix = str(Path(sys.base_prefix).resolve())
    return own_python(
        prefix, f"rollgym runs on the system Python ({sys.base_prefix}), which relays the agents' requests"
    )


def check_local_hosts(docker_host: Any) -> None:
    """`UsageError` unless every Docker host the sandboxes may go to runs on this machine: their mounts (the agent's
    install, the proxy socket) are this machine's paths. Several machines: one Ray actor, with its own proxy, per
    machine (`ray=`, `--ray`)."""
    from rollgym.envs.sandbox.daemon import configured_hosts

    here = {"localhost", "127.0.0.1", "::1", "[::1]", socket.gethostname(), socket.getfqdn()}
    for address in configured_hosts(docker_host):
        if address.startswith(("unix://", "npipe://")) or "://" not in address:
            continue
        host = urlsplit(address).hostname or ""
        if host not in here:
            raise UsageError(
                f"agents run in sandboxes on Docker hosts of this machine (their install and proxy socket are mounted "
                f"from here), not on {address}: for several machines run one Ray actor per machine (ray=, --ray)"
            )


def container_url(session_url: str, port: int = PORT) -> str:
    """The session's URL as the agent in the sandbox reaches it: the same path on the container's loopback."""
    parts = urlsplit(session_url)
    return urlunsplit(("http", f"127.0.0.1:{port}", parts.path, "", ""))


class SandboxedAgent:
    """`await agent(row, base_url, api_key)`: `spec`'s CLI on the row's task, in the sandbox of `env` (a registered
    environment with one); an `AgentDiff`, graded by the environment's own reward when `grade`.

    `sandbox`: SandboxConfig overrides (limits, docker_host); `env_options`: the environment's other options."""

    def __init__(
        self,
        spec: AgentSpec,
        *,
        env: str = "rollgym/SWE-v0",
        sandbox: dict[str, Any] | None = None,
        grade: bool = False,
        **env_options: Any,
    ) -> None:
        self.spec, self.sandbox_overrides, self.env_options = spec, dict(sandbox or {}), env_options
        self.env_id, self.grade = env, grade
        self.name = spec.name
        self.env_class = sandboxed_env_class(env)  # an environment without a sandbox: a clear error now

    def mounts(self, run_dir: str, user: str | None = None) -> list[SandboxMount]:
        """The read-only mounts of one run (`run_dir`: a fresh host folder for its socket). For a sandbox user other
        than root, folders under `/root` (rollgym's Python and the agents' cache, when they live there) get a
        skeleton of traversable folders mounted over the image's `/root`, which that user could not enter anyway."""
        paths = sorted({*self.spec.host_paths(), python_runtime()})
        own = [SandboxMount(source=p, target=p) for p in paths]
        socket_dir = Path(run_dir, "socket")
        socket_dir.mkdir(mode=0o755, exist_ok=True)
        socket_dir.chmod(0o755)  # the sandbox's user reaches the socket in it
        skeleton = []
        if user not in (None, "", "0", "root", "0:0") and any(p.startswith("/root/") for p in paths):
            root = Path(run_dir, "root")
            for p in paths:
                if p.startswith("/root/"):
                    (root / p.removeprefix("/root/")).mkdir(mode=0o755, parents=True, exist_ok=True)
            for folder in [root, *root.rglob("*")]:
                folder.chmod(0o755)
            skeleton = [SandboxMount(source=str(root), target="/root")]
        return [
            *skeleton,
            *own,
            SandboxMount(source=str(FORWARD.parent), target=SUPPORT_DIR),
            SandboxMount(source=str(socket_dir), target=SOCKET_DIR),
        ]

    async def __call__(self, row: dict, base_url: str, api_key: str | None) -> AgentDiff:
        placement = self.env_class.sandbox_placement(row, self.sandbox_overrides)
        check_local_hosts(placement.get("docker_host"))
        with tempfile.TemporaryDirectory(prefix="rollgym-agent-") as run_dir:
            gateway = SessionGateway(base_url, f"{run_dir}/socket/proxy.sock", api_key)
            mounts = [*self.sandbox_overrides.get("mounts", []), *self.mounts(run_dir, placement.get("user"))]
            overrides = {**self.sandbox_overrides, "mounts": mounts}
            env: Any = inner_env(make(self.env_id, sandbox=overrides, **self.env_options))
            env.connect_mcp_servers = False  # the agent connects the environment's MCP servers itself
            async with gateway:
                try:
                    _, info = await env.areset(options={"task": row})
                    workspace: AgentWorkspace = env.agent_workspace()
                    run = AgentRun(
                        workdir=workspace.workdir,
                        home="/tmp/rollgym-agent-home",
                        base_url=container_url(base_url),
                        api_key="sandboxed",  # the gateway holds the proxy's key; the agent needs none
                        task=workspace.task,
                        mcp_servers=servers_for_agent(self.spec, env.mcp_servers, str(info.get("task_id"))),
                    )
                    outputs = await self.converse(env, run, workspace)
                    return await self.result(env, outputs)
                finally:
                    await env.aclose()

    async def converse(self, env: Any, run: AgentRun, workspace: AgentWorkspace) -> list[str]:
        """Write the agent's files, then ask each prompt of the run in the sandbox; the agent's output for each."""
        sandbox = env.sandbox
        assert sandbox is not None  # areset started it
        made = await sandbox.aexec(f"mkdir -p {shlex.quote(run.home)}/tmp", timeout=60)
        if made.exit_code != 0:
            raise AgentFailed(f"cannot make the agent's HOME in its sandbox: {made.output[-500:]}")
        for path, content in self.spec.files(run).items():
            wrote = await sandbox.aexec(
                f"mkdir -p {shlex.quote(str(Path(path).parent))} && cat > {shlex.quote(path)}",
                stdin=content.encode(),
                timeout=60,
            )
            if wrote.exit_code != 0:
                raise AgentFailed(f"cannot write {path} in the agent's sandbox: {wrote.output[-500:]}")
        ignore = "".join(f"{pattern}\n" for pattern in self.spec.ignore)
        if ignore and workspace.exclude_file:  # the agent's own files are not part of its change
            exclude = shlex.quote(workspace.exclude_file)
            await sandbox.aexec(f"cat >> {exclude}", stdin=ignore.encode(), cwd=run.workdir, timeout=60)
        for prompt in self.spec.prompts(workspace.instructions):
            run.outputs.append(await self.ask(env, run, prompt))
            run.turn += 1
        return run.outputs

    async def ask(self, env: Any, run: AgentRun, prompt: str) -> str:
        sandbox = env.sandbox
        assert sandbox is not None
        python = f"{python_runtime()}/bin/python{sys.version_info.major}.{sys.version_info.minor}"
        relay = [python, "-I", "-S", f"{SUPPORT_DIR}/forward.py", f"{SOCKET_DIR}/proxy.sock", str(PORT), "--"]
        command = " ".join(shlex.quote(part) for part in [*relay, *self.spec.command(run, prompt)])
        environment = {
            "HOME": run.home,
            "TMPDIR": f"{run.home}/tmp",
            "TERM": "dumb",
            "NO_COLOR": "1",
            **GIT_IDENTITY,
            **self.spec.environment(run),
        }
        res = await sandbox.aexec(
            command,
            timeout=self.spec.timeout_s,
            cwd=run.workdir,
            env=environment,
            stdin=self.spec.stdin(run, prompt),
            max_output=4 * 2**20,
        )
        if res.timed_out:
            raise AgentTimedOut(
                f"{self.spec.name} did not finish within {self.spec.timeout_s:.0f}s: {res.output[-1000:]}"
            )
        if res.exit_code != 0:
            raise AgentFailed(f"{self.spec.name} exited with {res.exit_code}: {res.output[-2000:]}")
        return res.output

    async def result(self, env: Any, outputs: list[str]) -> AgentDiff:
        """What the agent left, graded by the environment's own reward when `grade` (an infrastructure failure of
        grading raises, as the environment raises it: a `SandboxError` is retried on resume)."""
        reward, components = (await env.compute_reward()) if self.grade else (None, {})
        outcome = await env.agent_outcome()
        return AgentDiff(
            diff=outcome.get("diff") or "",
            refused=outcome.get("refused"),
            outputs=outputs,
            reward=reward,
            reward_components=components,
        )
