"""Runs in verifiers' own venv (.ci/trainers-up verifiers): prime-rl's route to an environment, with verifiers' own
code. A taskset package exporting `RollgymLiveEnv` (here a minimal one: each task's data holds a rollgym row, its
config the environment id) is loaded by verifiers' own `EnvServer` (`load_environment`), and verifiers' own
`EnvClient.run` asks it for an episode as prime-rl's orchestrator does (prime-rl 559b447 orchestrator/envs.py: the
task's `model_dump()`, a `vf.TrainClientConfig`, the model, the sampling). The server runs a rollgym episode through
`/inference/v1/generate` (live_side.GenerateStandIn, a scripted Calculator episode with a tool turn) and streams the
trace back; the episode verifiers' client assembled is written as JSON for test_verifiers_live.py.

usage: python live_env_side.py OUT.json MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys

import verifiers.v1 as vf
from live_side import GenerateStandIn
from verifiers.v1.serve import EnvClient
from verifiers.v1.serve.server import EnvServer

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.verifiers.live_env import RollgymLiveEnv
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer

MODULE = "rollgym_live_tasks"  # verifiers imports a taskset by a dotless module name
sys.modules.setdefault(MODULE, sys.modules[__name__])


class LiveTaskConfig(vf.TaskConfig):
    env: str = "rollgym/Calculator-v0"


class LiveTaskData(vf.TaskData):
    row: dict


class LiveTask(vf.Task[LiveTaskData, vf.State, LiveTaskConfig]):
    pass


class LiveTasksetConfig(vf.TasksetConfig):
    id: str = MODULE
    task: LiveTaskConfig = LiveTaskConfig()


class LiveTaskset(vf.Taskset[LiveTask, LiveTasksetConfig]):
    def load(self):
        for row in CalculatorEnv.default_tasks(1):
            yield LiveTask(LiveTaskData(row=row, prompt=row["question"]), self.config.task)


__all__ = ["LiveTaskset", "RollgymLiveEnv"]


async def main(out_path: str, model_dir: str) -> None:
    tok = load_chat_tokenizer(model_dir)
    [task_row] = CalculatorEnv.default_tasks(1)

    def call(name, **args):
        body = json.dumps({"name": name, "arguments": args})
        return tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [tok.end_of_turn_id]

    completions = [call("add", a=1, b=2), call("submit", answer=task_row["answer"])]
    config = vf.SingleAgentEnvConfig(taskset={"id": MODULE}, agent={"harness": {"id": "null"}})
    server = EnvServer(config, address="tcp://127.0.0.1:0")
    assert isinstance(server.env, RollgymLiveEnv)  # verifiers' loader picked the taskset package's Env
    [task] = list(server.env.taskset.load())
    serving = asyncio.create_task(server.run())
    client = EnvClient(address=server.address)
    stand = GenerateStandIn(ScriptedEngine(completions, logprob=-0.25))
    try:
        async with stand as base_url:
            await client.wait_for_server_startup(timeout=60)
            episode = await client.run(
                vf.TrainClientConfig(base_url=base_url, renderer_model_name=model_dir),
                "smollm2",
                vf.SamplingConfig(temperature=0.7),
                task.data.model_dump(),
            )
    finally:
        await client.close()
        serving.cancel()
    [trace] = episode.traces
    [branch] = trace.branches
    result = {
        "ok": episode.ok,
        "reward": trace.reward,
        "has_error": trace.has_error,
        "token_ids": list(branch.token_ids),
        "sampled_mask": list(branch.sampled_mask),
        "logprobs": list(branch.logprobs),
        "completions": completions,
        "requests": [{"token_ids": r["token_ids"], "sampling_params": r["sampling_params"]} for r in stand.requests],
    }
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
