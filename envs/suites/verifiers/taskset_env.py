"""A verifiers v1 taskset as a rollgym environment: rollgym is the agent and the model client, verifiers decides.

Each episode is one of the taskset's `Task`s, run the way verifiers' own rollout runs it (verifiers/v1/rollout.py,
0.4.0) with rollgym's loop in the place of the harness and the model: the task's prompt (system prompt first, as
the chat harness sends it) opens the conversation; its toolsets' `@vf.tool` methods answer tool calls; every model
turn is committed to a verifiers `Trace` through verifiers' own message graph (`graph.prepare_turn(...).commit`);
the task's `@vf.stop` conditions end the episode; a reply without tool calls ends it as the chat harness's loop
does; the task's `finalize` and `score` (its `@vf.reward`s, `@vf.metric`s and judges) give the reward, `trace.reward`.
rollgym's loop records the tokens, masks and logprobs of each turn.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any

from rollgym.envs.core import Env, InvalidTaskError, ScorerError
from rollgym.envs.core.suites import require_installed
from rollgym.envs.suites.verifiers.suite_id import ENV_ID, SUITE
from rollgym.envs.suites.verifiers.toolsets import EpisodeState, rollgym_tools
from rollgym.errors import EnvError, UsageError


def load_taskset(environment: Any) -> Any:
    """The taskset of `environment`: a `vf.Taskset`, a `vf.Env` (its seed taskset), or a taskset id that verifiers'
    own loader imports (a built-in taskset or an installed module exporting one via `__all__`)."""
    import verifiers.v1 as vf

    if isinstance(environment, vf.Taskset):
        return environment
    if isinstance(environment, vf.Env):
        return environment.taskset
    if isinstance(environment, str) and environment:
        config = vf.taskset_config_type(environment).model_validate({"id": environment})
        return vf.load_taskset(config)
    raise UsageError(
        f"{ENV_ID} runs a verifiers environment: pass environment=<a vf.Taskset, a vf.Env, or a taskset module id>, "
        f"got {type(environment).__name__}"
    )


def _needs_runtime(fn: Any) -> bool:
    """Whether a task hook requires verifiers' `runtime` (a sandbox rollgym does not give verifiers tasks)."""
    param = inspect.signature(fn).parameters.get("runtime")
    return param is not None and param.default is inspect.Parameter.empty


def _overrides(task: Any, hook: str) -> bool:
    """Whether the task defines its own `setup`/`finalize` (verifiers' base ones do nothing)."""
    import verifiers.v1 as vf

    return getattr(type(task), hook) is not getattr(vf.Task, hook)


class VerifiersEnv(Env):
    """One verifiers taskset (`taskset`, set on the per-taskset subclass); a task row names a task by `index` (its
    position in the taskset) or `task_id` (its `key`)."""

    taskset: Any = None

    def __init__(self, max_turns: int | None = None) -> None:
        self._state = EpisodeState()
        task_type = type(self.taskset).task_type()
        self.toolsets = [
            *type(self.taskset).toolsets(self.taskset.config),
            *task_type.toolsets(self.taskset.config.task),
        ]
        super().__init__(max_turns=max_turns, tools=rollgym_tools(self.toolsets, self._state))
        self.vf_task: Any = None
        self.trace: Any = None
        self.history: list[dict] = []
        self._toolsets_ready = False
        self._prompt: list[Any] = []  # `history` as verifiers' messages, parsed once each
        self._vf_tools: Any = None  # the tools as verifiers' `Tool`s (fixed for the environment)

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """The taskset's first `n` tasks (cycling when it has fewer), in `load()` order."""
        tasks = list(itertools.islice(iter(cls.taskset), n)) if n else []
        if not tasks and n:
            raise InvalidTaskError(f"the verifiers taskset {type(cls.taskset).__name__} yields no task")
        rows = [{"index": t.data.idx, "task_id": t.key} for t in tasks]
        return [rows[i % len(rows)] for i in range(n)]

    def _task(self, row: dict[str, Any]) -> Any:
        """The task a row names, from the taskset's own iteration (so `idx` and the system prompt are verifiers')."""
        if "index" in row:
            found = self._task_at(int(row["index"]))
        elif "task_id" in row:
            found = next((t for t in self.taskset if t.key == row["task_id"]), None)
        else:
            raise InvalidTaskError(f"a {ENV_ID} task names a task by 'index' or 'task_id', got keys {sorted(row)}")
        if found is None:
            raise InvalidTaskError(f"the verifiers taskset {type(self.taskset).__name__} has no task {row}")
        return found

    @classmethod
    def _task_at(cls, index: int) -> Any:
        """The taskset's task at `index`, read once from its iteration and kept (verifiers reuses a task across its
        rollouts too), so a batch does not rebuild the tasks before it for every episode."""
        if "_loaded" not in cls.__dict__:
            cls._loaded, cls._reader = [], iter(cls.taskset)
        while index >= len(cls._loaded) and (task := next(cls._reader, None)) is not None:
            cls._loaded.append(task)
        return cls._loaded[index] if 0 <= index < len(cls._loaded) else None

    def _refuse_runtime_tasks(self, task: Any) -> None:
        """A task that needs verifiers' sandbox runtime (a container, or hooks and rewards reading `runtime`) is
        refused by name: rollgym runs verifiers tasks in its own process."""
        overridden = [name for name in ("setup", "finalize") if _overrides(task, name)]
        needs = [name for name in overridden if _needs_runtime(getattr(task, name))]
        needs += [fn.__name__ for fn in (*task.hooks("reward"), *task.hooks("metric")) if _needs_runtime(fn)]
        if task.NEEDS_CONTAINER or needs:
            raise InvalidTaskError(
                f"the verifiers task {type(task).__name__} needs verifiers' runtime sandbox "
                f"({', '.join(needs) or 'NEEDS_CONTAINER'}), which {ENV_ID} does not provide: run it with verifiers' "
                "own `eval` against rollgym's recording proxy (`rollgym proxy`) instead"
            )

    async def setup(self, task: dict[str, Any] | None) -> tuple[list[dict], dict[str, Any]]:
        import verifiers.v1 as vf
        from verifiers.v1.dialects.chat import message_to_wire
        from verifiers.v1.state import state_cls
        from verifiers.v1.utils.decorators import invoke

        self.vf_task = self._task(task or {"index": 0})
        self._refuse_runtime_tasks(self.vf_task)
        data = self.vf_task.data
        if data.prompt is None:
            raise InvalidTaskError(f"the verifiers task {data.idx} has no prompt (a user-opened exchange)")
        self.trace = vf.Trace(
            task=vf.TraceTask(
                type=type(self.vf_task).__name__, data=data, key=self.vf_task.key, hash=self.vf_task.hash
            ),
            state=state_cls(type(self.vf_task))(),
            agent=vf.AgentInfo(config=vf.AgentConfig(), name="rollgym"),
        )
        self._state.current = self.trace.state
        if not self._toolsets_ready:
            for toolset in self.toolsets:
                await toolset.setup()
            self._toolsets_ready = True
        for toolset in self.toolsets:
            await toolset.setup_task(self.vf_task.data)  # the task data, as its MCP server receives it
        if _overrides(self.vf_task, "setup"):
            await invoke(self.vf_task.setup, {"trace": self.trace})
        messages = [{"role": "system", "content": data.system_prompt}] if data.system_prompt else []
        if isinstance(data.prompt, str):
            messages.append({"role": "user", "content": data.prompt})
        else:
            messages += [message_to_wire(m) for m in data.prompt]
        self.history, self._prompt = list(messages), []
        return messages, {"task_id": self.vf_task.key, "verifiers_idx": data.idx}

    async def astep(self, action: dict):
        """The turn, committed to the verifiers trace first (its `Response` stops may end the episode), then rollgym's
        step (tool calls, or the end of the exchange); the task's `Trace` stops are checked after the tools ran."""
        if not self.done and isinstance(action, dict) and action.get("role") == "assistant":
            response = self._commit(action)
            stopped = await self._stopped(response)
            if stopped:
                self.finish(f"stop:{stopped}")
        messages, reward, terminated, truncated, info = await super().astep(action)
        self.history += [action, *messages]
        if not (terminated or truncated) and (stopped := await self._stopped(None)):
            self.finish(f"stop:{stopped}")
            self.done, terminated = True, True
            info["finish_reason"] = f"stop:{stopped}"
            try:
                reward, info["reward_components"] = await self.compute_reward()
            except EnvError as exc:  # as rollgym's own step: an episode that cannot be scored is reported
                info["error"] = exc
        return messages, reward, terminated, truncated, info

    def _commit(self, action: dict) -> Any:
        """The assistant message as a verifiers `Response`, committed to the trace's graph after the conversation so
        far (verifiers' `prepare_turn(...).commit`, as its interception server commits each model call)."""
        import verifiers.v1 as vf
        from verifiers.v1 import graph
        from verifiers.v1.dialects.chat import parse_message, parse_tools

        message = parse_message(action)
        assert isinstance(message, vf.AssistantMessage)  # `astep` takes assistant messages only
        response = vf.Response(
            id=f"rollgym-turn-{self.turn + 1}",
            created=0,
            model="rollgym",
            message=message,
            finish_reason="tool_calls" if message.tool_calls else "stop",
        )
        if self._vf_tools is None:
            self._vf_tools = parse_tools(self.toolset.schemas())
        self._prompt += [parse_message(m) for m in self.history[len(self._prompt) :]]
        graph.prepare_turn(self.trace, list(self._prompt), self._vf_tools).commit(response)
        self.trace.root_reply = message.content
        return response

    async def _stopped(self, response: Any) -> str | None:
        """The first of the task's `@vf.stop` conditions that holds: on the `Response` just sampled (`response`), or
        on the `Trace` (None); its name, recorded as the trace's stop condition."""
        import verifiers.v1 as vf
        from verifiers.v1.session import call_hook, hook_boundary

        for fn in self.vf_task.hooks("stop"):
            boundary = hook_boundary(fn, allow_trace=True)
            available: dict[type, object] = {vf.Trace: self.trace}
            if response is None and boundary is vf.Trace:
                fired = await call_hook(fn, available)
            elif response is not None and boundary is vf.Response:
                fired = await call_hook(fn, available | {vf.Response: response})
            else:
                continue
            if fired:
                self.trace.stop(fn.__name__)
                return fn.__name__
        return None

    async def compute_reward(self) -> tuple[float, dict[str, float]]:
        """The task's own `finalize` and `score` on the trace; a scorer that raises is this rollout's error."""
        from verifiers.v1.utils.decorators import invoke

        try:
            if _overrides(self.vf_task, "finalize"):
                await invoke(self.vf_task.finalize, {"trace": self.trace})
            await self.vf_task.score(self.trace)
        except Exception as exc:  # verifiers' TaskError boundary, or the hook's own exception
            self.trace.record_error(exc)
            raise ScorerError(f"the verifiers task {type(self.vf_task).__name__} failed to score: {exc}") from exc
        self.trace.is_completed = True
        components = {name: r.value for name, r in self.trace.rewards.items() if r is not None}
        components |= {f"metric/{k}": float(v) for k, v in self.trace.metrics.items() if v is not None}
        return float(self.trace.reward), components


@functools.cache
def _env_class(taskset: Any) -> type[VerifiersEnv]:
    """The environment class of one taskset object (its `default_tasks` know its tasks), one per taskset."""
    name = f"Verifiers{type(taskset).__name__}Env"
    made = type(name, (VerifiersEnv,), {"taskset": taskset, "__module__": __name__, "__doc__": VerifiersEnv.__doc__})
    assert issubclass(made, VerifiersEnv)
    return made


def make_verifiers_env(environment: Any = None, max_turns: int | None = None) -> VerifiersEnv:
    """gymnasium's entry point of `verifiers/env-v0`: the environment of `environment`'s taskset, or
    `SuiteNotInstalledError` naming the extra when verifiers is absent."""
    require_installed(ENV_ID, SUITE)
    return _env_class(load_taskset(environment))(max_turns=max_turns)
