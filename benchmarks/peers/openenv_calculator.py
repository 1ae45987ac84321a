"""The Calculator as an OpenEnv 0.10 environment server: an `Environment` with its `Action` (the model's tool calls)
and `Observation` (the tool results) served by `create_app` over FastAPI/WebSocket, one session per episode, as
OpenEnv's docs deploy an environment (here as a loopback process instead of a container). Run:
`python openenv_calculator.py PORT MAX_SESSIONS`.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import uvicorn
from hermes import calculate
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class CalculatorAction(Action):
    """The model's tool calls of one turn: [{"id", "name", "arguments"}]."""

    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


class CalculatorObservation(Observation):
    """The tool messages answering the calls (OpenAI `tool` messages), or the question at reset."""

    messages: list[dict[str, Any]] = Field(default_factory=list)


class CalculatorEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self.task: dict = {}
        self.submitted = None

    def reset(self, seed=None, episode_id=None, **kwargs: Any) -> CalculatorObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self.task, self.submitted = dict(kwargs.get("task") or {}), None
        return CalculatorObservation(messages=[{"role": "user", "content": self.task.get("question", "")}])

    def step(self, action: CalculatorAction, timeout_s=None, **kwargs: Any) -> CalculatorObservation:  # type: ignore[override] - OpenEnv's base step takes any Action
        self._state.step_count += 1
        messages = []
        for call in action.tool_calls:
            name, args = call["name"], call["arguments"]
            if name == "submit":
                self.submitted = args.get("answer")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": calculate(name, args)})
        done = self.submitted is not None
        reward = float(done and str(self.submitted) == str(self.task.get("answer")))
        return CalculatorObservation(messages=messages, done=done, reward=reward)

    @property
    def state(self) -> State:
        return self._state


def main() -> None:
    port, sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(CalculatorEnvironment, CalculatorAction, CalculatorObservation, max_concurrent_envs=sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", ws_max_queue=64, backlog=4096)


if __name__ == "__main__":
    main()
