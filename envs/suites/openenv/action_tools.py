"""An OpenEnv server's actions as the model's tools: its action model as one tool (`ActionTool`), or, for an
`MCPEnvironment`, each of its MCP tools (rollgym's `MCPTool`, over `MCPBridge`, which sends calls as `call_tool`
steps so the server's reward and done come back with each)."""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

from rollgym.envs.core.tools import Tool
from rollgym.envs.suites.openenv.wire import StepResult, call_tool_action, observation_text

#: a step of the episode: the action as the server takes it -> its observation (recorded by the environment)
Step = Callable[[dict[str, Any]], Awaitable[StepResult]]


def action_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """The action model's JSON schema as a tool's parameters: without `title` and the base `metadata` field (the
    model does not set it)."""
    params = copy.deepcopy(schema)
    params.pop("title", None)
    params.pop("description", None)
    params.setdefault("type", "object")
    params.setdefault("properties", {}).pop("metadata", None)
    params["required"] = [name for name in params.get("required", []) if name != "metadata"]
    for prop in params["properties"].values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return params


class ActionTool(Tool):
    """The server's action model as one tool: its arguments are the action, checked by the server (a refused one is a
    tool error the model reads); the result is the next observation."""

    def __init__(self, name: str, schema: dict[str, Any], step: Step) -> None:
        self.fn, self.step = step, step
        self.name = name
        self.parallel = False
        self.is_async = True
        self.description = schema.get("description") or f"Take one action ({schema.get('title', 'Action')})"
        self._schema_json = json.dumps(
            {
                "type": "function",
                "function": {"name": name, "description": self.description, "parameters": action_parameters(schema)},
            }
        )

    def validate(self, arguments: dict) -> dict:
        return dict(arguments)

    async def invoke(self, kwargs: dict) -> Any:
        return observation_text(await self.step(kwargs))


class MCPBridge:
    """What rollgym's `MCPTool` calls (`call(name, arguments)` -> an MCP `CallToolResult`), answered by a `call_tool`
    step of the OpenEnv session; a framework error of OpenEnv's (`ToolError`) becomes an error result."""

    def __init__(self, step: Step) -> None:
        self.step = step

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        import mcp_types

        result = await self.step(call_tool_action(name, arguments))
        observation = result.observation
        error = observation.get("error")
        if error:
            text = f"{error.get('error_type', 'error')}: {error.get('message', '')}"
            return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)
        raw = observation.get("result")
        if isinstance(raw, dict) and "content" in raw:
            return mcp_types.CallToolResult.model_validate(
                {"content": raw.get("content") or [], "structured_content": raw.get("structured_content"),
                 "is_error": bool(raw.get("is_error"))}
            )  # fmt: skip
        text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])


def mcp_tools(tool_list: list[dict[str, Any]], step: Step) -> list[Tool]:
    """The server's MCP tools (a `ListToolsObservation`'s `tools`) as rollgym tools over one bridge."""
    import mcp_types

    from rollgym.envs.mcp.server_tools import MCPTool

    bridge = MCPBridge(step)
    tools: list[Tool] = []
    for entry in tool_list:
        remote = mcp_types.Tool(
            name=entry["name"],
            description=entry.get("description") or None,
            input_schema=entry.get("input_schema") or entry.get("inputSchema") or {"type": "object"},
        )
        tools.append(MCPTool(bridge, remote))  # pyright: ignore[reportArgumentType]  # the bridge has MCPConnection's `call`
    return tools
