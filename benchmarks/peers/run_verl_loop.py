"""verl's own agent loop on the fidelity episodes (runs in verl's venv, .ci/trainers-up verl): verl 0.9.1's
`ToolAgentLoop` (hermes tool parser, Continuous Token builder for the family's `model_type`) with the Calculator's
`add` and `submit` as verl `FunctionTool`s, sampling through a server client that replays each episode's scripted
ids (verl's `TokenOutput`: ids and logprobs, as its vLLM server answers). Prints one JSON line per episode: verl's
response ids, mask and logprobs, and the loop's wall seconds beside the server's.

usage: python run_verl_loop.py EPISODES.json TOKENIZER_DIR MODEL_TYPE
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import verl
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
from verl.tools.function_tool import FunctionTool
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

LOGPROB = -0.5


class ScriptedServer:
    """verl's `LLMServerClient.generate` contract (verl/workers/rollout/llm_server.py), replaying one episode's ids."""

    def __init__(self, turns: list[list[int]]):
        self.turns, self.seconds = list(turns), 0.0

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        t = time.perf_counter()
        ids = self.turns.pop(0)
        out = TokenOutput(token_ids=ids, log_probs=[LOGPROB] * len(ids), stop_reason="completed")
        self.seconds += time.perf_counter() - t
        return out


def tools(schemas: list[dict]) -> list[FunctionTool]:
    def answer(**_):
        return "12"

    return [
        FunctionTool(name=s["function"]["name"], fn=answer, tool_schema=OpenAIFunctionToolSchema.model_validate(s))
        for s in schemas
    ]


def config(turns: int, response_length: int):
    cfg = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    rollout = cfg.actor_rollout_ref.rollout
    rollout.prompt_length, rollout.response_length = 4096, response_length
    rollout.multi_turn.max_assistant_turns = turns
    rollout.multi_turn.format = "hermes"
    rollout.trace.backend = None
    return cfg


async def main() -> None:
    work = json.loads(Path(sys.argv[1]).read_text())
    tokenizer = AutoTokenizer.from_pretrained(sys.argv[2])
    cfg = config(work["turns"], 8192)
    for warm, turns in [(True, t) for t in work["episodes"][:2]] + [(False, t) for t in work["episodes"]]:
        server = ScriptedServer(turns)
        loop = ToolAgentLoop(
            DictConfigWrap(cfg),
            server,
            tokenizer,
            None,
            RLHFDataset,
            DictConfigWrap(cfg.data),
            hf_model_type=sys.argv[3],
            tools=ToolListWrap(tools(work["tools"])),
        )
        t = time.perf_counter()
        out = await loop.run(
            {"temperature": 1.0, "top_p": 1.0}, raw_prompt=[{"role": "user", "content": work["question"]}]
        )
        wall = time.perf_counter() - t
        row = {
            "prompt_ids": out.prompt_ids,
            "response_ids": out.response_ids,
            "response_mask": out.response_mask,
            "response_logprobs": out.response_logprobs,
            "turns": out.num_turns,
            "wall_s": wall,
            "server_s": server.seconds,
            "generated": len(turns) - len(server.turns),
        }
        if not warm:  # the first two episodes again first: imports and caches warm
            print("EPISODE " + json.dumps(row), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
