"""An `MCPEnvironment` with two tools, written as OpenEnv's docs write one (a FastMCP server handed to
`MCPEnvironment`, served by `create_app` with `CallToolAction`/`CallToolObservation`): a note pad; `write_note`
keeps a note, `submit` ends the episode with reward 1.0 when the notes hold the word the reset asked for."""

from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class NotesEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self) -> None:
        mcp = FastMCP("notes")
        self.notes: list[str] = []
        self.word = "apple"
        self.finished = False
        self.reward: float | None = None

        @mcp.tool
        def write_note(text: str) -> str:
            """Keep a note."""
            self.notes.append(text)
            return f"{len(self.notes)} note(s) kept"

        @mcp.tool
        def submit() -> str:
            """Hand in the notes; the episode ends."""
            self.finished = True
            self.reward = 1.0 if any(self.word in note for note in self.notes) else 0.0
            return "submitted"

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self.notes, self.finished, self.reward = [], False, None
        self.word = ["apple", "river", "cloud"][(seed or 0) % 3]
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(metadata={"prompt": f"Write a note that contains the word {self.word!r}, then submit."})

    def _step_impl(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(metadata={"error": f"unknown action {type(action).__name__}"})

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        observation = await super().step_async(action, timeout_s=timeout_s, **kwargs)
        observation.done = self.finished
        observation.reward = self.reward
        return observation

    @property
    def state(self) -> State:
        return self._state


app = create_app(NotesEnvironment, CallToolAction, CallToolObservation, env_name="notes", max_concurrent_envs=8)
