"""The verifiers tool server of a rollgym environment: verifiers launches it per rollout (`python -m` this module in
its runtime, verifiers/v1/mcp/launch.py 0.4.0), it resets the environment on the rollout's task and serves the
environment's tools over MCP, each call answered by the environment's own tool dispatch."""

from __future__ import annotations

import json
import uuid
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from rollgym.envs import make


class RollgymToolsetConfig(vf.ToolsetConfig):
    env: str = "rollgym/Calculator-v0"
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class RollgymToolset(vf.Toolset[RollgymToolsetConfig, vf.State]):
    """The environment's tools under their own names (no server prefix, as rollgym names them)."""

    TOOL_PREFIX = None

    def __init__(self, config: RollgymToolsetConfig) -> None:
        super().__init__(config)
        self.env: Any = make(config.env, **config.env_kwargs).unwrapped

    async def setup_task(self, task) -> None:
        await self.env.areset(options={"task": task.row})

    def register(self, mcp) -> None:
        for name, tool in self.env.toolset.tools.items():
            mcp.add_tool(self._caller(name, tool), name=name, description=tool.description)

    def _caller(self, name: str, tool: Any):
        """An MCP tool with the rollgym tool's arguments, answered by the environment's dispatch (validation, errors
        as the model reads them)."""

        async def call(**arguments: Any) -> str:
            record = await self.env.toolset.call(
                {
                    "id": uuid.uuid4().hex,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            )
            return record.result

        call.__signature__ = tool.args_model.__signature__  # type: ignore[attr-defined]  # the tool's own arguments
        call.__annotations__ = {n: f.annotation for n, f in tool.args_model.model_fields.items()} | {"return": str}
        call.__name__ = name
        return call


if __name__ == "__main__":
    RollgymToolset.run()
