"""verifiers tasksets in rollgym's loop: turns/s and CPU per turn with an instant engine, side by side with rollgym's
own Calculator under the same loop, and with verifiers' own per-turn work alone.

Every configuration plays the same episode: the scripted policy calls `add(a=<a counter>, b=2)` for 8 turns. Rows:
- `rollgym Calculator-v0`: rollgym's own environment (the loop's cost with no suite);
- `verifiers/env-v0`: a verifiers v1 taskset whose `Toolset` has the same `add` tool (`@vf.tool`), its turns
  committed to verifiers' `Trace` graph, scored by its `@vf.reward`;
- `verifiers alone`: what verifiers' own rollout does per turn for this taskset, in-process and with no model, no
  tokenizer and no rollgym: `graph.prepare_turn(...).commit(Response)` for each model reply, the tool method called,
  then `task.score`: the part of verifiers' rollout rollgym keeps;
- `verifiers' own rollout`: verifiers' whole loop on the same Calculator (`to_verifiers`): its `null` chat harness
  (a PEP 723 program under `uv`, one per rollout), the tools in its MCP server (one per rollout), its interception
  server and eval client, against rollgym's recording proxy with the same instant engine; 3 episodes a round, one at
  a time (each starts two processes), CPU including those processes. Needs `uv` on PATH.
Each row runs 3 times beside the others (median reported), as this VM's speed drifts.
Run: `.venv/bin/python benchmarks/bench_suite_verifiers.py [--quick]` (needs verifiers: .ci/setup installs it).
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VF_NO_TELEMETRY", "1")
os.environ.setdefault("BENCH_NO_KEY", "none")

import verifiers.v1 as vf
from verifiers.v1 import graph
from verifiers.v1.dialects.chat import parse_message

from rollgym.engines.scripted import ScriptedEngine
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

TURNS = 8


class Adder(vf.Toolset):
    TOOL_PREFIX = None

    @vf.tool
    async def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b


class AddTask(vf.Task[vf.TaskData, vf.State]):
    @classmethod
    def toolsets(cls, config: vf.TaskConfig) -> list[vf.Toolset]:
        return [Adder(vf.ToolsetConfig())]

    @vf.reward
    async def calls(self, trace: vf.Trace) -> float:
        return float(sum(len(m.tool_calls or []) for m in trace.assistant_messages))


class AddTaskset(vf.Taskset[AddTask]):
    def load(self):
        for i in range(100_000):
            yield AddTask(vf.TaskData(prompt=f"Keep adding, episode {i}."), self.config.task)


class CountingAdd:
    """Scripted policy: `add(a=n, b=2)` with n = 1, 2, 3, ... (every tool result differs)."""

    def __init__(self, tok):
        self.head = tok.encode('<tool_call>\n{"name": "add", "arguments": {"a": ')
        self.tail = tok.encode(', "b": 2}}\n</tool_call>') + [tok.end_of_turn_id]
        self.digit = {d: tok.encode(d)[0] for d in "0123456789"}
        self.n = 0

    def __call__(self, prompt, sampling):
        self.n += 1
        return self.head + [self.digit[d] for d in str(self.n)] + self.tail


async def through_rollgym(tok, env_id: str, tasks: list[dict], env_kwargs: dict) -> tuple[float, float, int]:
    policy = Policy(engine=ScriptedEngine(CountingAdd(tok)), tokenizer=tok)
    wall, cpu = time.perf_counter(), time.process_time()
    rollouts = await run_rollouts(
        env_id, tasks, policy, concurrency=32, limits=Limits(max_turns=TURNS), env_kwargs=env_kwargs
    )
    turns = sum(len(r.turns) for r in rollouts)
    assert all(r.error is None for r in rollouts) and turns == TURNS * len(tasks)
    return time.perf_counter() - wall, time.process_time() - cpu, turns


async def verifiers_alone(taskset: AddTaskset, episodes: int) -> tuple[float, float, int]:
    """verifiers' own per-turn work for the same episodes: graph commits, the tool method, the task's scoring."""
    from verifiers.v1.dialects.chat import parse_tools

    tools = parse_tools([{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}])
    adder = Adder(vf.ToolsetConfig())
    wall, cpu = time.perf_counter(), time.process_time()
    n = 0
    for task, _ in zip(taskset, range(episodes), strict=False):
        trace = vf.Trace(task=vf.TraceTask(type="AddTask", data=task.data), agent=vf.AgentInfo(config=vf.AgentConfig()))
        messages = [parse_message({"role": "user", "content": task.data.prompt})]
        for turn in range(TURNS):
            n += 1
            call = {
                "id": f"c{turn}",
                "type": "function",
                "function": {"name": "add", "arguments": f'{{"a": {n}, "b": 2}}'},
            }
            reply = parse_message({"role": "assistant", "content": None, "tool_calls": [call]})
            response = vf.Response(id=f"t{turn}", created=0, model="m", message=reply, finish_reason="tool_calls")
            graph.prepare_turn(trace, messages, tools).commit(response)
            result = await adder.add(n, 2)
            messages += [reply, parse_message({"role": "tool", "tool_call_id": f"c{turn}", "content": str(result)})]
        await task.score(trace)
    return time.perf_counter() - wall, time.process_time() - cpu, episodes * TURNS


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def verifiers_own_loop(tok, episodes: int) -> tuple[float, float, int]:
    """verifiers' own whole rollout (`to_verifiers("rollgym/Calculator-v0")`: its `null` harness program, its MCP tool
    server, its interception server and eval client) against rollgym's recording proxy with the same instant engine:
    7 `add` calls, then a reply without one (verifiers' loop ends there). CPU counts its per-rollout processes."""
    from rollgym.integrations.verifiers.as_verifiers import to_verifiers
    from rollgym.proxy.server import RecordingProxy

    counting = CountingAdd(tok)
    done = tok.encode("Done.") + [tok.end_of_turn_id]

    def reply(prompt, sampling):
        turns_before = tok.decode(prompt).count("<|im_start|>assistant") - 1
        return done if turns_before >= TURNS - 1 else counting(prompt, sampling)

    policy = Policy(engine=ScriptedEngine(reply), tokenizer=tok)
    async with RecordingProxy(policy) as proxy:
        ctx = vf.ModelContext(
            model="m", client=vf.EvalClientConfig(base_url=proxy.session().base_url, api_key_var="BENCH_NO_KEY")
        )
        env = to_verifiers("rollgym/Calculator-v0", num_tasks=episodes + 1)
        tasks = list(env.taskset)
        async with env.serving():
            await env.run_episode(tasks[0], ctx)  # warms uv's script environment
            wall, cpu = time.perf_counter(), time.process_time() + children_cpu()
            results = [await env.run_episode(task, ctx) for task in tasks[1:]]
            wall, cpu = time.perf_counter() - wall, time.process_time() + children_cpu() - cpu
    turns = sum(t.num_turns for e in results for t in e.traces)
    assert all(e.ok for e in results) and turns == TURNS * episodes, [e.errors for e in results]
    return wall, cpu, turns


def main() -> None:
    quick = "--quick" in sys.argv
    episodes = 100 if quick else 400
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    taskset = AddTaskset(vf.TasksetConfig(id="add"))
    vf_tasks = [{"index": i} for i in range(episodes)]
    from rollgym.envs.builtin.calculator import CalculatorEnv

    calc_tasks = CalculatorEnv.default_tasks(episodes)
    rows: dict[str, list[tuple[float, float, int]]] = {
        "rollgym Calculator-v0": [],
        "verifiers/env-v0": [],
        "verifiers alone": [],
    }
    for _ in range(3):
        rows["rollgym Calculator-v0"].append(asyncio.run(through_rollgym(tok, "rollgym/Calculator-v0", calc_tasks, {})))
        rows["verifiers/env-v0"].append(
            asyncio.run(through_rollgym(tok, "verifiers/env-v0", vf_tasks, {"environment": taskset}))
        )
        rows["verifiers alone"].append(asyncio.run(verifiers_alone(taskset, episodes)))
    if shutil.which("uv"):
        rows["verifiers' own rollout"] = [asyncio.run(verifiers_own_loop(tok, 3)) for _ in range(3)]
    else:
        print("verifiers' own rollout: not run, no `uv` on PATH (its chat harness runs under uv)")
    print(f"{episodes} episodes x {TURNS} turns, instant engine, concurrency 32; median of 3 runs side by side")
    base = None
    for name, runs in rows.items():
        rate = statistics.median(t / w for w, _, t in runs)
        cpu_us = statistics.median(c / t * 1e6 for _, c, t in runs)
        base = base or cpu_us
        print(f"{name:<24} {rate:9,.1f} turns/s   {cpu_us:9,.0f} us CPU/turn   {cpu_us / base:7,.2f}x Calculator's CPU")


if __name__ == "__main__":
    main()
