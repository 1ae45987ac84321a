"""SkyRL's own agent loop on the fidelity episodes (runs in SkyRL's venv, .ci/trainers-up skyrl): SkyRL 0.4.0's
`SkyRLGymGenerator.agent_loop` on its default generator config (multi-turn conversation, token-in/token-out), with a
skyrl-gym text environment answering each tool call with "12" (a tool message) and an inference client replaying each
episode's scripted ids (SkyRL's `InferenceEngineOutput`: text, ids, stop reason, logprobs). Prints one JSON line per
episode: SkyRL's response ids, loss mask and logprobs, and the loop's wall seconds beside the client's.

usage: python run_skyrl_loop.py EPISODES.json TOKENIZER_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from skyrl.train.config.config import SkyRLTrainConfig
from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator
from skyrl_gym.envs import register
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
from transformers import AutoTokenizer

LOGPROB = -0.5


class ToolResultEnv(BaseTextEnv):
    """Answers every turn with one tool message ("12") until the turn budget, as a calculator tool would."""

    def __init__(self, env_config=None, extras=None):
        super().__init__()
        self.max_turns = (extras or {}).get("max_turns", 4)

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        done = self.turns >= self.max_turns
        obs = [] if done else [{"role": "tool", "content": "12"}]
        return BaseTextEnvStepOutput(observations=obs, reward=1.0 if done else 0.0, done=done, metadata={})


class ScriptedClient:
    """SkyRL's inference-client `generate` contract (skyrl/backends/skyrl_train/inference_engines/base.py), replaying
    one episode's ids."""

    def __init__(self, tokenizer, turns: list[list[int]]):
        self.tokenizer, self.turns, self.seconds = tokenizer, list(turns), 0.0

    async def generate(self, engine_input, model=None):
        t = time.perf_counter()
        ids = self.turns.pop(0)
        out = {
            "responses": [self.tokenizer.decode(ids)],
            "response_ids": [ids],
            "stop_reasons": ["stop"],
            "response_logprobs": [[LOGPROB] * len(ids)],
        }
        self.seconds += time.perf_counter() - t
        return out

    async def finish_session(self, session_id) -> None:
        return None


async def main() -> None:
    work = json.loads(Path(sys.argv[1]).read_text())
    tokenizer = AutoTokenizer.from_pretrained(sys.argv[2])
    register(id="rollgym_tool_result", entry_point=ToolResultEnv)
    cfg = SkyRLTrainConfig()
    cfg.generator.max_turns = work["turns"]
    for warm, turns in [(True, t) for t in work["episodes"][:2]] + [(False, t) for t in work["episodes"]]:
        client = ScriptedClient(tokenizer, turns)
        generator = SkyRLGymGenerator(cfg.generator, cfg.environment.skyrl_gym, client, tokenizer)
        t = time.perf_counter()
        out = await generator.agent_loop(
            [{"role": "user", "content": work["question"]}],
            "rollgym_tool_result",
            {},
            max_tokens=8192,
            max_input_length=16384,
            sampling_params={"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": 0},
        )
        wall = time.perf_counter() - t
        row = {
            "prompt_ids": out.prompt_ids,
            "response_ids": out.response_ids,
            "loss_mask": out.loss_mask,
            "rollout_logprobs": out.rollout_logprobs,
            "wall_s": wall,
            "server_s": client.seconds,
            "generated": len(turns) - len(client.turns),
        }
        if not warm:  # the first two episodes again first: imports and caches warm
            print("EPISODE " + json.dumps(row), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
