"""`MCPTool`: one tool of an MCP server as a rollgym `Tool` (its name, description and JSON input schema as the
server lists them), and the text the model is shown of a call's result."""

from __future__ import annotations

import json
from typing import Any

import mcp_types

from rollgym.envs.core.tools import Tool
from rollgym.envs.mcp.connection import MCPConnection
from rollgym.envs.mcp.errors import MCPToolFailure


class MCPTool(Tool):
    """A server's tool: arguments go to the server as the model sent them (the server checks them against its own
    schema, and a refusal is a tool error the model reads); an error result is a tool error too."""

    def __init__(self, connection: MCPConnection, remote: mcp_types.Tool, prefix: str = "") -> None:
        self.connection = connection
        self.remote_name = remote.name
        self.name = prefix + remote.name
        self.parallel = False
        self.is_async = True
        self.description = remote.description or remote.title or remote.name
        params = dict(remote.input_schema or {})
        params.pop("title", None)
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        self._schema_json = json.dumps(
            {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}
        )

    def validate(self, arguments: dict) -> dict:
        return dict(arguments)

    async def invoke(self, kwargs: dict) -> Any:
        result = await self.connection.call(self.remote_name, kwargs)
        text = result_text(result)
        if result.is_error:
            raise MCPToolFailure(text or "the MCP server reported an error and said nothing more")
        return text


def result_text(result: mcp_types.CallToolResult) -> str:
    """The content blocks as text, one after another; structured content as JSON when there is no block."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, default=str)
    return "\n".join(parts)


def _block_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        text = getattr(resource, "text", None)
        return text if text is not None else f"[resource {resource.uri} ({resource.mime_type or 'binary'})]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link {block.uri}]"
    mime = getattr(block, "mime_type", None)
    return f"[{getattr(block, 'type', 'content')} ({mime})]" if mime else f"[{getattr(block, 'type', 'content')}]"
