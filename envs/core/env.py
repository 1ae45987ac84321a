"""`Env`: the base class of rollgym environments, a `gymnasium.Env` over chat messages with async twins."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypedDict

import gymnasium

from rollgym.envs.core.errors import EnvCheckError, EpisodeStateError, InvalidActionError
from rollgym.envs.core.spaces import action_space, message_problem, observation_space
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.core.tools import ToolCallRecord, ToolSet
from rollgym.errors import EnvError, UsageError


class ResetInfo(TypedDict, total=False):
    """What `reset` tells the loop besides the messages (environments may add their own keys)."""

    tools: list[dict]  # OpenAI tool schemas the model may call
    task_id: str  # the task's stable id (`task_id_of`)


class StepInfo(TypedDict, total=False):
    """What `step` tells the loop besides messages, reward and the end flags.

    Nothing in it depends on the clock, so two runs with the same seed and action give equal info
    (gymnasium's determinism check): a call's duration lives on its record, outside its equality.
    """

    turn: int  # 1-based index of this step in the episode
    tool_calls: list[ToolCallRecord]  # one record per call, in order
    reward_components: dict[str, float]  # named parts of the terminal reward (empty until the episode ends)
    finish_reason: (
        str  # why the episode ended: submitted | text_reply | error | max_turns | the reason a tool gave `finish`
    )
    error: BaseException  # the failure that ended the episode (e.g. a dead sandbox), as the exception itself


#: The methods the loop awaits, with the signature each must have.
ASYNC_METHODS = {
    "setup": "(self, task) -> tuple[list[dict], dict]",
    "compute_reward": "(self) -> tuple[float, dict[str, float]]",
    "on_text_reply": "(self, message) -> tuple[list[dict], bool]",
    "teardown": "(self) -> None",
}


def setup_result(env_name: str, result: Any) -> tuple[list[dict], dict[str, Any]]:
    """`setup`'s (messages, info), or an `EnvCheckError` naming what it returned instead."""
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
        raise EnvCheckError(
            f"{env_name}.setup must return (messages, info): a list of chat messages and a dict (task_id, ...), "
            f"got {type(result).__name__}: {str(result)[:200]}"
        )
    return result


def reward_result(env_name: str, result: Any) -> tuple[Any, dict[str, Any]]:
    """`compute_reward`'s (reward, components), or an `EnvCheckError` naming what it returned instead."""
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
        raise EnvCheckError(
            f"{env_name}.compute_reward must return (reward, {{component: value}}), e.g. `return 1.0, {{}}`, "
            f"got {type(result).__name__}: {str(result)[:200]}"
        )
    return result


def _in_phase(exc: BaseException, phase: str) -> BaseException:
    """`exc`, marked with where in the episode it happened (the rollout's error record says so)."""
    try:
        exc.rollgym_phase = phase  # type: ignore[attr-defined]  # an attribute of ours on the exception
    except AttributeError:  # an exception type with __slots__
        pass
    return exc


class Env(gymnasium.Env):
    """A tool-using chat environment. Subclasses implement `setup` and `compute_reward`, define
    tools with `@tool`, and may override `on_text_reply` and `teardown`.

    `reset` -> (messages, `ResetInfo`); `step(assistant_message)` -> (tool/user messages, reward,
    terminated, truncated, `StepInfo`). Turn budgets belong to the caller (`rollgym.Limits`); an
    environment sets `max_turns` only when the task itself has a turn limit (then it truncates).
    """

    metadata = {"render_modes": []}
    max_turns: int | None = None
    fatal_errors: tuple[type[BaseException], ...] = ()  # tool errors that end the episode (e.g. a dead sandbox)
    #: MCP servers whose tools join the environment's for each episode (`MCPServerConfig`s or dicts of their fields)
    mcp_servers: tuple[Any, ...] = ()
    #: whether `reset` connects them to the environment's own tools (an agent CLI run in the environment's sandbox,
    #: which connects them itself through its own MCP configuration, turns it off: `SandboxedAgent`)
    connect_mcp_servers: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A method the loop awaits that is written as a plain `def` is refused where the class is defined, naming the
        signature it needs (not a raw `TypeError` in every rollout)."""
        super().__init_subclass__(**kwargs)
        for name, signature in ASYNC_METHODS.items():
            method = cls.__dict__.get(name)
            if method is not None and not inspect.iscoroutinefunction(method):
                raise EnvCheckError(f"{cls.__name__}.{name} must be `async def {name}{signature}`")

    def __init__(
        self, max_turns: int | None = None, tools: Iterable[Callable] = (), mcp_servers: Iterable[Any] | None = None
    ) -> None:
        """`tools`: extra plain functions (marked with `@tool` or not) besides the `@tool` methods; `mcp_servers`:
        MCP servers whose tools join them (docs/environments.md#mcp-servers), instead of the class's own."""
        super().__init__()
        if max_turns is not None:
            self.max_turns = max_turns
        if mcp_servers is not None:
            self.mcp_servers = tuple(mcp_servers)
        if self.mcp_servers:
            from rollgym.envs.core.agent_sandbox import is_sandboxed
            from rollgym.envs.mcp.declaration import declared_servers

            self.mcp_servers = declared_servers(type(self).__name__, self.mcp_servers, is_sandboxed(type(self)))
        self._mcp: Any = None  # the episode's running MCP servers (rollgym.envs.mcp.servers.MCPServers)
        self.toolset = ToolSet.from_object(self, extra=tools, fatal_errors=self.fatal_errors)
        self.action_space = action_space(list(self.toolset.tools))
        self.observation_space = observation_space()
        self.task: dict[str, Any] = {}
        self.task_id: str = ""
        self.turn = 0
        self.done = True
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finish_reason: str | None = None

    # -- hooks for subclasses -----------------------------------------------------------------
    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """`n` reproducible tasks for batch generation when the caller gives none (override to provide them)."""
        raise UsageError(
            f"{cls.__name__} has no default tasks: pass tasks (a JSONL file, a datasets directory, or rows)"
        )

    @classmethod
    def prepare_tasks(cls, tasks: list[dict[str, Any]], log: Callable[[str], None] = print) -> dict[str, BaseException]:
        """Get what a batch's tasks need before any rollout starts (e.g. their images), once per batch; the tasks that
        cannot run, by task id, with why (each of their rollouts is then recorded as that failure, and the batch
        goes on). Default: nothing to prepare."""
        return {}

    async def setup(self, task: dict[str, Any] | None) -> tuple[list[dict], dict[str, Any]]:
        """Prepare an episode for `task`; return the initial messages and task metadata."""
        raise NotImplementedError

    async def compute_reward(self) -> tuple[float, dict[str, float]]:
        """The terminal reward and its named components (called once, when the episode ends)."""
        raise NotImplementedError

    async def on_text_reply(self, message: dict) -> tuple[list[dict], bool]:
        """An assistant message without tool calls: reply messages and whether to terminate (default: end)."""
        return [], True

    async def teardown(self) -> None:
        """Release what `setup` acquired (sandboxes...). Must be idempotent."""

    def finish(self, reason: str = "submitted") -> None:
        """Called by a tool (e.g. `submit`) to end the episode after this turn."""
        self._finish_reason = reason

    # -- async API ------------------------------------------------------------------------------
    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[dict], ResetInfo]:
        super().reset(seed=seed)
        await self._stop_mcp()
        await self.teardown()
        options = options or {}
        self.turn, self.done, self._finish_reason = 0, True, None  # no episode until setup succeeds
        self.toolset.fatal = None
        self.task = dict(options.get("task") or self._default_task(seed) or {})
        messages, meta = setup_result(type(self).__name__, await self.setup(self.task or None))
        if self.mcp_servers and self.connect_mcp_servers:
            await self._start_mcp()
        self.done = False
        self.task_id = str(meta.get("task_id") or task_id_of(self.task))
        info: ResetInfo = {"tools": self.toolset.schemas(), "task_id": self.task_id, **meta}  # pyright: ignore[reportAssignmentType]  # meta adds the environment's own keys, which a TypedDict cannot declare (no PEP 728 on 3.11)
        return messages, info

    def _default_task(self, seed: int | None) -> dict[str, Any] | None:
        """The task of a reset that names none: `default_tasks(1, seed)` when the environment defines it (a seed
        drawn from the episode's generator when none is given, so unseeded resets still vary), else None."""
        if getattr(type(self).default_tasks, "__func__", None) is Env.default_tasks.__func__:
            return None
        pick = seed if seed is not None else int(self.np_random.integers(2**31 - 1))
        tasks = type(self).default_tasks(1, pick)
        return dict(tasks[0]) if tasks else None

    async def astep(self, action: dict) -> tuple[list[dict], float, bool, bool, StepInfo]:
        if self.done:
            raise EpisodeStateError(
                "no episode in progress (it ended, or reset() failed or was not called): call reset()"
            )
        problem = message_problem(action, ("assistant",))
        if problem:
            raise InvalidActionError(f"step() takes one assistant message (OpenAI format): {problem}")
        self.turn += 1
        calls = action.get("tool_calls") or []
        records: list[ToolCallRecord] = []
        terminated = False
        if calls:
            records = await self.toolset.dispatch(calls)
            messages = [{"role": "tool", "tool_call_id": r.id, "name": r.name, "content": r.result} for r in records]
        else:
            messages, terminated = await self.on_text_reply(action)
            if terminated:
                self._finish_reason = self._finish_reason or "text_reply"
        info: StepInfo = {"turn": self.turn, "tool_calls": records, "reward_components": {}}
        if self.toolset.fatal is not None:
            info["error"] = _in_phase(self.toolset.fatal, "tool")
            self._finish_reason = "error"
        terminated = terminated or self._finish_reason is not None  # submitted, text_reply, error, or a tool's own
        truncated = not terminated and self.max_turns is not None and self.turn >= self.max_turns
        reward = 0.0
        if terminated or truncated:
            self.done = True
            info["finish_reason"] = self._finish_reason or "max_turns"
            try:
                reward, components = reward_result(type(self).__name__, await self.compute_reward())
                info["reward_components"] = components
            except EnvError as exc:  # the episode could not be scored (e.g. grading died): reported, not raised
                info.setdefault("error", _in_phase(exc, "reward"))
            except Exception as exc:  # marked with its phase, then raised on as it was
                _in_phase(exc, "reward")
                raise
        return messages, float(reward), terminated, truncated, info

    async def _start_mcp(self) -> None:
        """Start the episode's MCP servers (after `setup`: a sandbox they run in exists by then) and join their tools."""
        from rollgym.envs.mcp.servers import MCPServers

        self._mcp = MCPServers(self.mcp_servers, getattr(self, "sandbox", None))
        await self._mcp.start(self.toolset)
        self.action_space = action_space(list(self.toolset.tools))

    async def _stop_mcp(self) -> None:
        """Stop the episode's MCP servers (before `teardown` takes their sandbox away) and take their tools out."""
        running, self._mcp = getattr(self, "_mcp", None), None
        if running is not None:
            await running.stop(self.toolset)
            self.action_space = action_space(list(self.toolset.tools))

    async def aclose(self) -> None:
        if getattr(self, "_mcp", None) is not None:
            await asyncio.shield(self._stop_mcp())
        if type(self).teardown is not Env.teardown:  # nothing to protect from cancellation otherwise
            await asyncio.shield(self.teardown())

    # -- sync API (gymnasium) ---------------------------------------------------------------------
    def _run(self, coro):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise EpisodeStateError("an event loop is running: use `await env.areset()/astep()/aclose()` instead")
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self._run(self.areset(seed=seed, options=options))

    def step(self, action: dict):
        return self._run(self.astep(action))

    def close(self) -> None:
        """Release the episode's resources; idempotent (works from sync code and inside a running loop)."""
        try:
            if _loop_running():
                worker = threading.Thread(target=lambda: asyncio.run(self.aclose()), name="rollgym-env-close")
                worker.start()
                worker.join()
            else:
                self._run(self.aclose())
        finally:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.close()
            self._loop = None


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False
