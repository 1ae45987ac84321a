"""The workload through SkyRL-Gym 0.4: the Calculator as a `BaseTextEnv` with a `ToolGroup` (the environment API its
docs show: `init(prompt)`, `step(action_text)` returning observations, reward, done), driven by a loop written as
SkyRL's `SkyRLGymGenerator.agent_loop` does it (its docs, "Multi-turn generation", codepath 1): token-in/token-out
against the server's `/v1/completions`, the prompt rendered once with the model's chat template, each turn's sampled
ids appended verbatim, and each observation tokenized with the fixed-base approach (the template applied to a fixed
base conversation plus the new messages, the base's ids cut off, with the base cut after its last EOS so the
separator after it is kept). skyrl-train itself (Ray, vLLM workers) is not installed: its generator's loop is what
is timed here, over the same HTTP client rollgym's engine uses (aiohttp).
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import version

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import aiohttp
from _measure import Clock, Counts, arguments, load_workload, report
from hermes import calculate, parse_calls
from skyrl_gym.envs.base_text_env import BaseTextEnv
from skyrl_gym.tools.core import ToolGroup, tool
from transformers import AutoTokenizer


class CalculatorTools(ToolGroup):
    def __init__(self) -> None:
        super().__init__(name="calculator")

    @tool
    def add(self, a, b):
        return calculate("add", {"a": a, "b": b})

    @tool
    def subtract(self, a, b):
        return calculate("subtract", {"a": a, "b": b})

    @tool
    def multiply(self, a, b):
        return calculate("multiply", {"a": a, "b": b})

    @tool
    def submit(self, answer):
        return calculate("submit", {"answer": answer})


class CalculatorTextEnv(BaseTextEnv):
    """The Calculator in SkyRL-Gym's text-action form: the env parses the model's text for Hermes tool calls."""

    def __init__(self, task: dict, max_turns: int, nudge: str) -> None:
        super().__init__()
        self.task, self.max_turns, self.nudge = task, max_turns, nudge
        self.submitted = None
        self.init_tool_groups([CalculatorTools()])

    def step(self, action: str):
        self.turns += 1
        calls = parse_calls(action)
        if not calls:
            observations = [{"role": "user", "content": self.nudge}]
        else:
            observations = []
            for name, args in calls:
                if name not in self.tool_to_toolgroup:
                    result = f"Error: unknown tool {name!r}"
                else:
                    ordered = [args.get("answer")] if name == "submit" else [args.get("a"), args.get("b")]
                    result = self._execute_tool("calculator", name, ordered)
                if name == "submit":
                    self.submitted = args.get("answer")
                observations.append({"role": "tool", "content": result})
        done = self.turns >= self.max_turns or self.submitted is not None
        reward = float(done and str(self.submitted) == str(self.task["answer"]))
        return {"observations": [] if done else observations, "reward": reward, "done": done, "metadata": {}}


class Generator:
    """SkyRL's agent loop (codepath 1), over one aiohttp session."""

    def __init__(self, work: dict, base_url: str, concurrency: int) -> None:
        self.work = work
        self.url = base_url.rstrip("/") + "/completions"
        self.tok = AutoTokenizer.from_pretrained(work["model_dir"])
        self.tok.chat_template = work["chat_template"]
        base = [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "I am a user."},
            {"role": "assistant", "content": "I am an assistant."},
        ]
        ids = self.tok.apply_chat_template(base, add_generation_prompt=False, tokenize=True, return_dict=False)
        eos = self.tok.convert_tokens_to_ids(work["eos_token"])
        if eos in ids:
            ids = ids[: len(ids) - 1 - ids[::-1].index(eos) + 1]
        self.base, self.base_ids, self.eos = base, ids, eos
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))

    async def episode(self, task: dict, counts: Counts) -> None:
        work, s = self.work, self.work["sampling"]
        env = CalculatorTextEnv(task, work["max_turns"], work["nudge"])
        prompt = [{"role": "system", "content": work["system"]}, {"role": "user", "content": task["question"]}]
        chat, _ = env.init(prompt)
        input_ids = self.tok.apply_chat_template(
            chat, tools=work["tools"], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        loss_mask, logprobs = [], []
        while True:
            body = {
                "prompt": input_ids,
                "max_tokens": s["max_tokens"],
                "temperature": s["temperature"],
                "top_p": s["top_p"],
                "seed": s["seed"],
                "logprobs": 0,
                "return_token_ids": True,
                "skip_special_tokens": False,
                "stop_token_ids": [self.eos],
            }
            async with self.session.post(self.url, json=body) as resp:
                data = await resp.json()
                if resp.status != 200:
                    raise RuntimeError(f"HTTP {resp.status}: {str(data)[:200]}")
            choice = data["choices"][0]
            output_ids = choice["token_ids"]
            output = self.tok.decode(output_ids, skip_special_tokens=True)
            counts.turns += 1
            counts.sampled += len(output_ids)
            out = env.step(output)
            input_ids = input_ids + output_ids
            loss_mask += [1] * len(output_ids)
            logprobs += choice["logprobs"]["token_logprobs"]
            if out["done"]:
                break
            obs_ids = self.tok.apply_chat_template(
                [*self.base, *out["observations"]], add_generation_prompt=True, tokenize=True, return_dict=False
            )[len(self.base_ids) :]
            input_ids += obs_ids
            loss_mask += [0] * len(obs_ids)
            logprobs += [0.0] * len(obs_ids)
        env.close()

    async def batch(self, tasks: list[dict], concurrency: int, counts: Counts) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(task: dict) -> None:
            async with gate:
                try:
                    await self.episode(task, counts)
                except Exception as exc:  # noqa: BLE001 - one failed episode is counted, the batch goes on
                    counts.failed(exc)
                counts.episodes.append(task["task_id"])

        await asyncio.gather(*(one(t) for t in tasks))


async def main() -> None:
    args = arguments()
    work = load_workload(args.workload)
    gen = Generator(work, args.base_url, args.concurrency)
    tasks = work["tasks"]
    await gen.batch(tasks[: args.warmup], min(args.concurrency, args.warmup), Counts())
    counts = Counts()
    with Clock() as clock:
        await gen.batch(tasks[: args.episodes], args.concurrency, counts)
    await gen.session.close()
    report(
        "skyrl-gym",
        version("skyrl-gym"),
        counts,
        clock.wall,
        clock.cpu,
        clock.base_kib,
        clock.peak_kib,
        args.concurrency,
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
