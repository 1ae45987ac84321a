"""OpenEnv's wire format, field for field as openenv 0.10.0 defines it (`openenv.core.env_server.types`,
`serialization.serialize_observation`, `mcp_types`): the WebSocket messages of a session on `/ws` and the results
they carry, so rollgym speaks the protocol without importing openenv (whose servers bring it themselves)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: the fields of an observation that are not shown to the model (`serialize_observation` lifts reward and done out)
HIDDEN_OBSERVATION_FIELDS = ("reward", "done", "metadata")
#: action schemas (`/schema` "action" title) of servers whose actions are MCP's `list_tools` / `call_tool`
MCP_ACTION_TITLES = frozenset({"CallToolAction", "ListToolsAction", "Action"})


class StepResult(BaseModel):
    """One observation as the server sends it (`WSObservationResponse.data`, the `ResetResponse`/`StepResponse`
    shape): the observation's own fields, its reward (None when the environment gave none) and whether it is done."""

    model_config = ConfigDict(extra="ignore")

    observation: dict[str, Any] = Field(default_factory=dict)
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] | None = None


class ServerError(BaseModel):
    """`WSErrorResponse.data`: what the server refused and why (`code`: a `WSErrorCode`)."""

    model_config = ConfigDict(extra="ignore")

    message: str = ""
    code: str = ""
    errors: list[Any] = Field(default_factory=list)


class Incoming(BaseModel):
    """A message from the server: `observation`, `state` or `error`, its payload in `data`."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["observation", "state", "error"]
    data: dict[str, Any] = Field(default_factory=dict)


class ServerSchemas(BaseModel):
    """`GET /schema` (`SchemaResponse`): the JSON schemas of the server's action, observation and state."""

    model_config = ConfigDict(extra="ignore")

    action: dict[str, Any] = Field(default_factory=dict)
    observation: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)

    def speaks_mcp(self) -> bool:
        """Whether the server's actions are MCP tool calls (an `MCPEnvironment` served with `CallToolAction`)."""
        return self.action.get("title") in MCP_ACTION_TITLES


def reset_message(options: dict[str, Any]) -> str:
    """`WSResetMessage`: start an episode; `options` are `reset`'s keyword arguments (seed, episode_id, ...)."""
    return json.dumps({"type": "reset", "data": options})


def step_message(action: dict[str, Any]) -> str:
    """`WSStepMessage`: one action, as the server's action model validates it."""
    return json.dumps({"type": "step", "data": action})


def list_tools_action() -> dict[str, Any]:
    """`ListToolsAction` as `MCPToolClient._step_payload` sends it."""
    return {"type": "list_tools"}


def call_tool_action(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`CallToolAction` as `MCPToolClient._step_payload` sends it."""
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


CLOSE_MESSAGE = json.dumps({"type": "close"})


def observation_text(result: StepResult) -> str:
    """What the model is shown of an observation: its own fields (not reward, done, metadata), or its metadata when it
    has none (a bare `Observation`); one string field as the text itself, else JSON."""
    shown = {k: v for k, v in result.observation.items() if k not in HIDDEN_OBSERVATION_FIELDS}
    if not shown:
        shown = dict(result.observation.get("metadata") or result.metadata or {})
    if len(shown) == 1 and isinstance(next(iter(shown.values())), str):
        return next(iter(shown.values()))
    return json.dumps(shown, ensure_ascii=False)
