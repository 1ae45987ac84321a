"""One τ² episode driven turn by turn through τ²'s own `Orchestrator` (no thread per episode, unlike `tau2.gym`):
the policy's message is the agent's next message, the orchestrator runs the tools and the user simulator until the
agent's turn comes back, and the finished trajectory is a τ² `SimulationRun` for τ²'s evaluator."""

from __future__ import annotations

import uuid
from typing import Any

from tau2.agent.base import is_valid_agent_history_message
from tau2.agent.llm_agent import AGENT_INSTRUCTION, AGENT_SOLO_INSTRUCTION, SYSTEM_PROMPT, SYSTEM_PROMPT_SOLO
from tau2.data_model.message import AssistantMessage, Message, MultiToolMessage, ToolMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.gym import gym_agent
from tau2.orchestrator.orchestrator import Orchestrator, Role
from tau2.user.base import UserError
from tau2.user.user_simulator import DummyUser
from tau2.utils.utils import get_now

from rollgym.envs.suites.tau2.importing import tau2_registry
from rollgym.envs.suites.tau2.user import ModelUser


class GymAgent(gym_agent.GymAgent):
    """τ²'s gym agent (its `done` stop tool and stop rules) without its thread handshake: the next message is set
    before the orchestrator asks for it. Named as τ²'s, which its orchestrator accepts as the agent in solo mode."""

    def __init__(self, tools: list[Any], domain_policy: str) -> None:
        super().__init__(tools=tools, domain_policy=domain_policy)
        self.next_message: AssistantMessage | None = None

    def generate_next_message(self, message, state):
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        elif message is not None:
            state.messages.append(message)
        action, self.next_message = self.next_message, None
        assert action is not None, "the orchestrator asked the agent twice for one policy turn"
        action = self._check_if_stop_toolcall(action)
        state.messages.append(action)
        return action, state


class Simulation:
    """τ²'s environment, agent, user and orchestrator for one task; `act` plays the policy's message."""

    def __init__(
        self, domain: str, task: Any, *, solo_mode: bool, user: ModelUser | None, max_steps: int, max_errors: int
    ) -> None:
        """`user`: the user simulator (None in solo mode, where τ²'s `DummyUser` stands in)."""
        registry = tau2_registry()
        self.domain, self.task, self.solo_mode = domain, task, solo_mode
        environment = registry.get_env_constructor(domain)(solo_mode=solo_mode)
        tools = environment.get_tools()
        user_tools = environment.get_user_tools() if environment.user_tools is not None else []
        self.agent = GymAgent(tools + (user_tools if solo_mode else []), environment.get_policy())
        if user is not None:
            user.tools = user_tools or None
            user.instructions = task.user_scenario
        elif not solo_mode:
            raise ValueError("a τ² episode with a user needs its user simulator")
        self.orchestrator = Orchestrator(
            domain=domain,
            agent=self.agent,
            user=user if user is not None else DummyUser(),
            environment=environment,
            task=task,
            max_steps=max_steps,
            max_errors=max_errors,
            solo_mode=solo_mode,
        )
        self.started = False
        self.seen = 0  # trajectory messages already shown to the policy
        self.start_time = get_now()

    # -- what the policy sees ------------------------------------------------------------------------
    def system_prompt(self) -> str:
        """τ²'s own agent prompt (`tau2.agent.llm_agent`): the instructions and the domain's policy (solo: the ticket)."""
        policy = self.orchestrator.environment.get_policy()
        if self.solo_mode:
            instruction = AGENT_SOLO_INSTRUCTION.format(
                stop_function_name=GymAgent.STOP_FUNCTION_NAME, stop_token=GymAgent.STOP_TOKEN
            )
            return SYSTEM_PROMPT_SOLO.format(
                agent_instruction=instruction, domain_policy=policy, ticket=self.task.ticket
            )
        return SYSTEM_PROMPT.format(agent_instruction=AGENT_INSTRUCTION, domain_policy=policy)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The agent's tools as τ² describes them (OpenAI schemas), `done` included."""
        return [tool.openai_schema for tool in self.agent.tools]

    def new_messages(self, *, with_assistant: bool = False) -> list[Message]:
        """The trajectory's messages the agent sees that the policy has not been shown yet (its own left out)."""
        trajectory = self.orchestrator.trajectory
        fresh = [
            m
            for m in trajectory[self.seen :]
            if is_valid_agent_history_message(m) and (with_assistant or not isinstance(m, AssistantMessage))
        ]
        self.seen = len(trajectory)
        return fresh

    # -- playing ---------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.orchestrator.done

    def start(self) -> list[Message]:
        """Set up τ²'s environment and play until the agent's first turn (solo: the policy moves first); the
        opening messages."""
        if not self.solo_mode:
            self.orchestrator.initialize()
            self.started = True
            self._settle()
        return self.new_messages(with_assistant=True)

    def act(self, message: AssistantMessage) -> list[Message]:
        """Play the policy's message, then the tools and the user until the agent's turn comes back (or the end); the
        messages the agent is shown in return."""
        self.agent.next_message = message
        if not (message.has_text_content() or message.is_tool_call()):
            self._end(TerminationReason.AGENT_ERROR)
        elif not self.started:
            self.started = True
            self.orchestrator.initialize()  # solo: the agent's first message is part of τ²'s initialization
        else:
            self._step()
        self._settle()
        return self.new_messages()

    def _settle(self) -> None:
        o = self.orchestrator
        while not o.done and o.to_role != Role.AGENT:
            self._step()

    def _step(self) -> None:
        """One orchestrator step with the limit checks of `Orchestrator.run` (tau2 26.3); a user that breaks τ²'s
        protocol ends the episode as τ² ends it (`USER_ERROR`)."""
        o = self.orchestrator
        try:
            o.step()
        except UserError:
            self._end(TerminationReason.USER_ERROR)
            return
        if o.to_role == Role.ENV:
            return
        if o.step_count >= o.max_steps:
            self._end(TerminationReason.MAX_STEPS)
        if o.num_errors >= o.max_errors:
            self._end(TerminationReason.TOO_MANY_ERRORS)

    def _end(self, reason: TerminationReason) -> None:
        self.orchestrator.done = True
        self.orchestrator.termination_reason = reason

    # -- the result --------------------------------------------------------------------------------
    def simulation_run(self) -> SimulationRun:
        """The episode as τ²'s `SimulationRun` (as `Orchestrator.run` wraps one up); an episode the caller cut short
        ends with `MAX_STEPS`."""
        o = self.orchestrator
        if not o.done or o.termination_reason is None:
            self._end(TerminationReason.MAX_STEPS)
        assert o.termination_reason is not None
        return SimulationRun(
            id=str(uuid.uuid4()),
            task_id=self.task.id,
            start_time=self.start_time,
            end_time=get_now(),
            duration=0.0,
            termination_reason=o.termination_reason,
            reward_info=None,
            messages=o.get_trajectory(),
            seed=o.seed,
        )

    def evaluate(self, run: SimulationRun) -> Any:
        """τ²'s own evaluation of the run (`evaluate_simulation`, `EvaluationType.ALL`: database, actions, and what the
        agent communicated, as each task's reward basis says) as its `RewardInfo`."""
        return evaluate_simulation(
            simulation=run,
            task=self.task,
            evaluation_type=EvaluationType.ALL,
            solo_mode=self.solo_mode,
            domain=self.domain,
        )


def tool_results(messages: list[Message]) -> list[ToolMessage]:
    """The tool messages among `messages`."""
    return [m for m in messages if isinstance(m, ToolMessage)]
