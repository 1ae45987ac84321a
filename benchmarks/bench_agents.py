"""Agents in their task's sandbox vs today's host subprocess (printed, never asserted): `python benchmarks/bench_agents.py`.

Per built-in agent that is installed, on one bundled SWE task, against a recording proxy over an instant engine
(`ScriptedEngine`: every reply is one short final answer, so the model costs nothing and each agent ends after its
first call): time-to-first-request (from the start of a run to the proxy receiving the agent's first call) and the
whole run, (a) inside the task's sandbox (`SandboxedAgent`: sandbox start from the host's prepared state, mounts,
gateway, relay) and (b) as the CLI ran before, as a host subprocess in a checkout of the task with a private HOME.
Interleaved per agent, `--rounds` rounds; ratios (sandbox / host) are side by side in one run, as this machine's speed
drifts. Also: `.ci/agents-up` on the installed cache (what a second run pays for installing the agents).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


class FirstRequest:
    """ASGI middleware: when each session's first model request arrived."""

    def __init__(self, app) -> None:
        self.app, self.first = app, {}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST" and "/sessions/" in scope["path"]:
            self.first.setdefault(scope["path"].split("/")[2], time.monotonic())
        return await self.app(scope, receive, send)


def _host_run(spec, row, base_url: str) -> None:
    """The agent as a host subprocess (how the examples ran it before agents moved into sandboxes)."""
    from rollgym.agents import AgentRun
    from rollgym.envs.swe import SWETask, checkout_task
    from rollgym.envs.swe.checkout import GIT_IDENTITY

    task = SWETask.model_validate(row)
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        repo = checkout_task(task, Path(tmp) / "src", ignore=spec.ignore)
        home = Path(tmp) / "home"
        (home / "tmp").mkdir(parents=True)
        run = AgentRun(workdir=str(repo), home=str(home), base_url=base_url, api_key="bench", task=task)
        for path, content in spec.files(run).items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content)
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home / "tmp"), "TERM": "dumb"}
        env.update({"NO_COLOR": "1", **GIT_IDENTITY, **spec.environment(run)})
        prompt = task.problem_statement
        subprocess.run(
            spec.command(run, prompt),
            cwd=repo,
            env=env,
            input=spec.stdin(run, prompt),
            capture_output=True,
            timeout=600,
        )


async def _measure(proxy, capture, spec, row, where: str) -> tuple[float, float]:
    from rollgym.agents import SandboxedAgent

    sess = proxy.session()
    start = time.monotonic()
    if where == "sandbox":
        await SandboxedAgent(spec)(row, sess.base_url, proxy.api_key)
    else:
        await asyncio.to_thread(_host_run, spec, row, sess.base_url)
    end = time.monotonic()
    first = capture.first.get(sess.id)
    return ((first - start) if first else float("nan")), end - start


async def main(rounds: int, names: list[str]) -> None:
    from rollgym.agents import agent_spec
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.swe import load_bundled_tasks
    from rollgym.errors import UsageError
    from rollgym.proxy import ProxySettings, RecordingProxy
    from rollgym.rollouts.policy import Policy
    from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
    from rollgym.tokenization.templates import CHATML_TOOLS

    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    reply = tok.encode("Done.") + [tok.end_of_turn_id]
    proxy = RecordingProxy(
        Policy(engine=ScriptedEngine(lambda prompt, sampling: reply), tokenizer=tok),
        settings=ProxySettings(default_max_tokens=16),
    )
    capture = FirstRequest(proxy.app)
    proxy.app = capture
    row = load_bundled_tasks()[0].model_dump(mode="json")
    t0 = time.monotonic()
    subprocess.run(["bash", str(ROOT / ".ci" / "agents-up")], capture_output=True, check=False)
    print(
        f".ci/agents-up on the installed cache: {(time.monotonic() - t0) * 1000:.0f} ms (a second run installs nothing)"
    )
    print(f"{'agent':<15} {'where':<8} {'first request s (p50)':>22} {'whole run s (p50)':>18}")
    async with proxy:
        for name in names:
            options = {"step_limit": 1} if name == "mini-swe-agent" else {}
            try:
                spec = agent_spec(name, max_output_tokens=16, timeout_s=300, **options)
                spec.executable()
            except UsageError as exc:
                print(f"{name:<15} skipped: {exc}")
                continue
            await _measure(proxy, capture, spec, row, "sandbox")  # warm: the task's prepared state, page cache
            got: dict[str, list[tuple[float, float]]] = {"sandbox": [], "host": []}
            for _ in range(rounds):
                for where in ("sandbox", "host"):
                    got[where].append(await _measure(proxy, capture, spec, row, where))
            p50 = {w: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for w, v in got.items()}
            for where in ("sandbox", "host"):
                print(f"{name:<15} {where:<8} {p50[where][0]:>22.2f} {p50[where][1]:>18.2f}")
            first = p50["sandbox"][0] / p50["host"][0]
            whole = p50["sandbox"][1] / p50["host"][1]
            overhead = p50["sandbox"][1] - p50["host"][1]
            print(f"{name:<15} {'ratio':<8} {first:>21.2f}x {whole:>17.2f}x   (+{overhead:.2f} s per rollout)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", default="claude-code,codex,opencode,mini-swe-agent,aider")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.agents.split(",")))
