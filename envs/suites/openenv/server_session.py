"""`OpenEnvSession`: one episode's session with an OpenEnv server (reset, then steps), each answer checked against
the protocol; a refused action comes back as a `ServerRefusal` the model is told, a lost server as an error."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from rollgym.envs.core.tools import ToolFailure
from rollgym.envs.suites.openenv.channels import Channel
from rollgym.envs.suites.openenv.errors import OpenEnvProtocolError
from rollgym.envs.suites.openenv.wire import Incoming, ServerError, StepResult, reset_message, step_message

#: `WSErrorCode`s that mean the action was refused (the model's doing), not that the server failed
_REFUSED_ACTION = {"VALIDATION_ERROR": "bad_arguments", "EXECUTION_ERROR": "tool_error"}


class ServerRefusal(ToolFailure):
    """The server refused an action (it did not validate, or the environment's `step` raised): told to the model."""


class OpenEnvSession:
    """Reset and step over one `Channel`; `message_timeout_s` bounds each answer."""

    def __init__(self, channel: Channel, name: str, message_timeout_s: float = 60.0) -> None:
        self.channel, self.name, self.message_timeout_s = channel, name, message_timeout_s

    async def reset(self, options: dict[str, Any]) -> StepResult:
        """Start an episode; a server that refuses to is a protocol error (the task or the server is wrong)."""
        try:
            return await self._exchange(reset_message(options))
        except ServerRefusal as exc:
            raise OpenEnvProtocolError(f"the OpenEnv server {self.name} refused reset({options}): {exc}") from exc

    async def step(self, action: dict[str, Any]) -> StepResult:
        """One action's observation; `ServerRefusal` when the server refuses the action."""
        return await self._exchange(step_message(action))

    async def close(self) -> None:
        await self.channel.close()

    async def _exchange(self, message: str) -> StepResult:
        await self.channel.send(message)
        raw = await self.channel.receive(self.message_timeout_s)
        try:
            incoming = Incoming.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            raise OpenEnvProtocolError(f"the OpenEnv server {self.name} sent {raw[:200]!r}: {exc}") from None
        if incoming.type == "error":
            error = ServerError.model_validate(incoming.data)
            kind = _REFUSED_ACTION.get(error.code)
            if kind is None:  # capacity, factory or session errors: the server cannot serve this episode
                raise OpenEnvProtocolError(f"the OpenEnv server {self.name} failed: {error.code}: {error.message}")
            detail = "; ".join(_error_line(e) for e in error.errors)
            raise ServerRefusal(f"{error.message}{': ' + detail if detail else ''}", kind)
        if incoming.type != "observation":
            raise OpenEnvProtocolError(f"the OpenEnv server {self.name} answered {incoming.type!r}, not an observation")
        return StepResult.model_validate(incoming.data)


def _error_line(error: Any) -> str:
    """One pydantic error of the server's as `loc: msg`."""
    if not isinstance(error, dict):
        return str(error)
    loc = ".".join(str(p) for p in error.get("loc", ())) or "(action)"
    return f"{loc}: {error.get('msg', '')}"
