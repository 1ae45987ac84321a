"""An OpenEnv environment server as a rollgym environment: the reset observation is the user message; the server's
MCP tools (an `MCPEnvironment`) or its action model (one tool) are the model's tools; each call is one `step`, whose
observation is the tool's result; the server's reward and done end and score the episode."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rollgym.envs.core import Env
from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.core.spaces import action_space
from rollgym.envs.core.suites import require_installed
from rollgym.envs.suites.openenv.action_tools import ActionTool, mcp_tools
from rollgym.envs.suites.openenv.errors import OpenEnvProtocolError, OpenEnvServerError
from rollgym.envs.suites.openenv.server_session import OpenEnvSession
from rollgym.envs.suites.openenv.suite_ids import ENV_ID, SUITE
from rollgym.envs.suites.openenv.url_server import Server, URLServer
from rollgym.envs.suites.openenv.wire import StepResult, list_tools_action, observation_text
from rollgym.errors import UsageError

DEFAULT_SYSTEM_PROMPT = (
    "You act in an environment through its tools: each tool call is one action, and its result is what the "
    "environment shows you next. Keep acting until the environment says the episode is over."
)


class OpenEnvTask(BaseModel):
    """A task row: `reset`'s arguments (`seed`, `episode_id`, and any other the server's `reset` takes, under
    `reset`, e.g. a Task API's `split` and `index`)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = ""
    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = None
    reset: dict[str, Any] = Field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        """The `WSResetMessage` data."""
        given = {"seed": self.seed, "episode_id": self.episode_id}
        return {**{k: v for k, v in given.items() if v is not None}, **self.reset}

    def stable_id(self) -> str:
        if self.task_id:
            return self.task_id
        extra = "-".join(f"{k}={v}" for k, v in sorted(self.reset.items()))
        return "-".join(p for p in (f"seed{self.seed}" if self.seed is not None else "", extra) if p) or "default"


class OpenEnvEnv(Env):
    """One OpenEnv server (`url`, or an `image` rollgym runs in its Docker sandbox); a session per episode."""

    fatal_errors = (OpenEnvServerError,)  # a server lost mid-episode fails the rollout (infrastructure)

    def __init__(
        self,
        url: str | None = None,
        image: str | None = None,
        *,
        tools: Literal["auto", "mcp", "action"] = "auto",
        action_tool: str = "act",
        reward: Literal["sum", "last"] = "sum",
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        connect_timeout_s: float = 30.0,
        message_timeout_s: float = 60.0,
        server: dict[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> None:
        """`tools`: `mcp` for an `MCPEnvironment`'s tools, `action` for the action model as the tool `action_tool`,
        `auto` to tell by the server's action schema; `reward`: the episode's reward is the `sum` of the server's step
        rewards or the `last` one; `server`: for an `image`, `ImageServerConfig` fields (`command`, `port`,
        `start_timeout_s`, `sandbox`)."""
        if (url is None) == (image is None):
            raise UsageError(f"{ENV_ID} takes exactly one of `url` (a running server) and `image` (one rollgym runs)")
        if server and image is None:
            raise UsageError("`server` settings are for an `image` rollgym runs; a `url` server runs elsewhere")
        super().__init__(max_turns=max_turns)
        self.url, self.image = url, image
        self.tool_mode, self.action_tool, self.reward_mode = tools, action_tool, reward
        self.system_prompt = system_prompt
        self.connect_timeout_s, self.message_timeout_s = connect_timeout_s, message_timeout_s
        self.server_settings = dict(server or {})
        self.server: Server | None = None
        self.session: OpenEnvSession | None = None
        self.results: list[StepResult] = []
        self._server_tools: list[str] = []

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """`n` episodes, reset with seeds `seed` ... `seed + n - 1`."""
        return [{"seed": seed + i, "task_id": f"seed{seed + i}"} for i in range(n)]

    async def _server(self) -> Server:
        """The server, started (an image) or connected to (a URL) at the first episode and kept for the next."""
        if self.server is None:
            if self.image is not None:
                from rollgym.envs.suites.openenv.image_server import ImageServer, ImageServerConfig

                config = ImageServerConfig.model_validate({"image": self.image, **self.server_settings})
                self.server = await ImageServer.start(config)
            else:
                assert self.url is not None
                self.server = await URLServer.connect(self.url, self.connect_timeout_s)
        return self.server

    async def setup(self, task: dict[str, Any] | None):
        try:
            row = OpenEnvTask.model_validate(task or {})
        except ValidationError as exc:
            raise InvalidTaskError(f"an OpenEnv task row: {exc}") from None
        server = await self._server()
        self.session = OpenEnvSession(await server.open(), server.name, self.message_timeout_s)
        self.results = []
        first = await self.session.reset(row.options())
        if first.done:
            raise OpenEnvProtocolError(f"the OpenEnv server {server.name} ended the episode at reset({row.options()})")
        mcp = self.tool_mode == "mcp" or (self.tool_mode == "auto" and server.schemas.speaks_mcp())
        if mcp:
            listing = await self.session.step(list_tools_action())
            tools = mcp_tools(list(listing.observation.get("tools") or []), self._step)
        else:
            tools = [ActionTool(self.action_tool, server.schemas.action, self._step)]
        self._join_tools(tools)
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": observation_text(first)})
        return messages, {"task_id": row.stable_id(), "server": server.name}

    def _join_tools(self, tools: list[Any]) -> None:
        """This episode's server tools join the environment's (taken out again at teardown)."""
        taken = [t.name for t in tools if t.name in self.toolset.tools]
        if taken:
            raise OpenEnvProtocolError(f"the OpenEnv server's tool(s) {taken} clash with the environment's own")
        self.toolset.tools.update({t.name: t for t in tools})
        self._server_tools = [t.name for t in tools]
        self.action_space = action_space(list(self.toolset.tools))

    async def _step(self, action: dict[str, Any]) -> StepResult:
        """One step of the episode: the server's observation, kept for the reward; a done one ends the episode."""
        assert self.session is not None, "setup() first"
        result = await self.session.step(action)
        self.results.append(result)
        if result.done:
            self.finish("server_done")
        return result

    async def compute_reward(self):
        rewards = [float(r.reward) for r in self.results if r.reward is not None]
        reward = (sum(rewards) if self.reward_mode == "sum" else rewards[-1]) if rewards else 0.0
        if not math.isfinite(reward):
            raise OpenEnvProtocolError(f"the OpenEnv server gave a reward of {reward}")
        done = bool(self.results and self.results[-1].done)
        return reward, {"server_steps": float(len(self.results)), "server_done": float(done)}

    async def teardown(self) -> None:
        session, self.session = self.session, None
        for name in self._server_tools:
            self.toolset.tools.pop(name, None)
        self._server_tools = []
        if session is not None:
            await session.close()

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            server, self.server = self.server, None
            if server is not None:
                await server.close()


def make_openenv_env(**kwargs: Any) -> OpenEnvEnv:
    """gymnasium's entry point of `openenv/env-v0`."""
    require_installed(ENV_ID, SUITE)
    return OpenEnvEnv(**kwargs)
