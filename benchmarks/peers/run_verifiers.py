"""The workload through verifiers 0.4 (`verifiers.v1`): `SingleAgentEnv` over the Calculator taskset
(`vf_calculator.py`), the `null` harness (verifiers' plain chat tool loop, run as its own program per rollout),
tools served over MCP per rollout, the model reached through verifiers' interception server with its eval client
(chat completions); everything local (`SubprocessConfig` runtimes). Episodes run through `Env.run_slot`, as
`vf-eval` runs them, at most `--concurrency` at once. CPU counts the whole process tree (the per-rollout programs
and tool servers are children of this process: `RUSAGE_CHILDREN`).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from importlib.metadata import version

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VF_NO_TELEMETRY", "1")
# The per-rollout tool servers import the taskset's module; the harness program finds `uv` beside this python.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [os.path.dirname(os.path.abspath(__file__)), os.environ.get("PYTHONPATH")])
)
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])

from _measure import Clock, Counts, arguments, load_workload, report


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def main() -> None:
    args = arguments()
    args.warmup = min(args.warmup, 1)  # one episode warms it (each costs seconds: two processes start)
    os.environ["BENCH_PEERS_WORKLOAD"] = os.path.abspath(args.workload)
    os.environ["BENCH_API_KEY"] = "none"
    work = load_workload(args.workload)
    import verifiers.v1 as vf

    s = work["sampling"]
    config = vf.SingleAgentEnvConfig(
        taskset={"id": "vf_calculator"},
        agent=vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig(), max_turns=work["max_turns"]),
    )
    env = vf.SingleAgentEnv(config)
    client = vf.EvalClientConfig(base_url=args.base_url, api_key_var="BENCH_API_KEY")
    ctx = vf.ModelContext(
        model=args.model,
        client=client,
        sampling=vf.ModelContext.__dataclass_fields__["sampling"]
        .default_factory()
        .model_copy(
            update={
                "temperature": s["temperature"],
                "top_p": s["top_p"],
                "max_tokens": s["max_tokens"],
                "seed": s["seed"],
            }
        ),
    )
    tasks = list(env.taskset)

    async def batch(selected, concurrency: int, counts: Counts) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(task) -> None:
            slot = env.slots(task, 1)[0]
            episode = await env.run_slot(slot, ctx, gate)
            counts.episodes.append(task.data.id)
            errors = [e.message for e in episode.errors]
            for trace in episode.traces:
                counts.turns += len(trace.calls)
                counts.sampled += sum(
                    getattr(getattr(c, "usage", None), "completion_tokens", 0) or 0 for c in trace.calls
                )
                errors += [e.message for e in trace.errors]
            if not episode.ok:
                counts.errors += 1
                counts.first_error = counts.first_error or json.dumps(errors)[:600]

        await asyncio.gather(*(one(t) for t in selected))

    async with env.serving():
        await batch(tasks[: args.warmup], min(args.concurrency, args.warmup), Counts())
        counts = Counts()
        child0 = children_cpu()
        with Clock() as clock:
            await batch(tasks[: args.episodes], args.concurrency, counts)
        child = children_cpu() - child0
    # Each rollout runs two processes of its own (the harness's chat program and the MCP tool server): the largest
    # child's peak RSS, twice, is what one concurrent rollout adds beyond this process.
    largest_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report(
        "verifiers",
        version("verifiers"),
        counts,
        clock.wall,
        clock.cpu + child,
        clock.base_kib,
        clock.peak_kib,
        args.concurrency,
        {"helper_cpu_s": child, "helper_kib_per_rollout": 2 * largest_child},
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
