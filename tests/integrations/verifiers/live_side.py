"""Runs in verifiers' own venv (.ci/trainers-up verifiers): rollgym episodes sampled through the request verifiers'
`TrainClient` sends to prime-rl's vLLM (`live_episode`, `PrimeRLGenerateEngine`: verifiers' own OpenAI client for a
`vf.TrainClientConfig`, renderers' own response parsing), against a server answering vLLM's `/inference/v1/generate`
field for field as renderers 0.1.12 reads it (`choices[0].token_ids`, `choices[0].logprobs.content[i]` =
`{"token": "token_id:<id>", "logprob"}`, `choices[0].finish_reason`, `prompt_token_ids`), sampling with the real
SmolLM2-135M and with a scripted Calculator episode with a tool turn. Each episode comes back as verifiers' own
`vf.WireEpisode`; its branches are written as JSON for test_verifiers_live.py.

usage: python live_side.py OUT.json MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys

import verifiers.v1 as vf
from aiohttp import web

from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.engines.transformers_engine import TransformersEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.verifiers.live_episode import live_episode
from rollgym.limits import Limits
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer


class GenerateStandIn:
    """vLLM's `/inference/v1/generate` over a rollgym engine; `requests` holds every body."""

    def __init__(self, engine) -> None:
        self.engine, self.requests, self.runner = engine, [], None

    async def generate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        sp = body["sampling_params"]
        top_k = int(sp.get("top_k", -1))
        out = await self.engine.generate(
            body["token_ids"],
            SamplingParams(
                temperature=sp.get("temperature", 1.0),
                top_p=sp.get("top_p", 1.0),
                top_k=top_k if top_k > 0 else 0,
                max_tokens=sp["max_tokens"],
                stop_token_ids=sp.get("stop_token_ids") or [],
            ),
        )
        content = [
            {"token": f"token_id:{t}", "logprob": lp} for t, lp in zip(out.completion_ids, out.logprobs, strict=True)
        ]
        choice = {
            "index": 0,
            "token_ids": out.completion_ids,
            "logprobs": {"content": content},
            "finish_reason": out.finish_reason,
        }
        return web.json_response({"request_id": "gen-1", "prompt_token_ids": body["token_ids"], "choices": [choice]})

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_post("/inference/v1/generate", self.generate)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"

    async def __aexit__(self, *exc) -> None:
        await self.runner.cleanup()


def branches(episode: vf.WireEpisode) -> list[dict]:
    trace = episode.traces[0]
    return [
        {"token_ids": list(b.token_ids), "sampled_mask": list(b.sampled_mask), "logprobs": list(b.logprobs)}
        for b in trace.branches
    ]


async def main(out_path: str, model_dir: str) -> None:
    tok = load_chat_tokenizer(model_dir)
    task = CalculatorEnv.default_tasks(1)[0]

    def call(name, **args):
        body = json.dumps({"name": name, "arguments": args})
        return tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [tok.end_of_turn_id]

    completions = [call("add", a=1, b=2), call("submit", answer=task["answer"])]
    result = {}
    stand = GenerateStandIn(ScriptedEngine(completions, logprob=-0.25))
    async with stand as base_url:
        episode = await live_episode(
            "rollgym/Calculator-v0", task, vf.TrainClientConfig(base_url=base_url), "smollm2", tokenizer=model_dir
        )
    assert isinstance(episode, vf.WireEpisode)
    trace = episode.traces[0]
    result["scripted"] = {
        "branches": branches(episode),
        "completions": completions,
        "reward": trace.reward,
        "has_error": trace.has_error,
        "requests": [{"token_ids": r["token_ids"], "sampling_params": r["sampling_params"]} for r in stand.requests],
    }

    model = TransformersEngine(model_dir, model_name="smollm2-135m")
    stand = GenerateStandIn(model)
    try:
        async with stand as base_url:
            episode = await live_episode(
                "rollgym/Calculator-v0",
                task,
                vf.TrainClientConfig(base_url=base_url),
                "smollm2",
                tokenizer=model_dir,
                limits=Limits(max_turns=2, max_tokens_per_turn=24),
            )
    finally:
        await model.aclose()
    result["real"] = {
        "branches": branches(episode),
        "has_error": episode.traces[0].has_error,
        "requests": [{"token_ids": r["token_ids"]} for r in stand.requests],
    }

    async with GenerateStandIn(model) as base_url:  # a server that is gone: an errored trace, not a zero score
        pass
    episode = await live_episode(
        "rollgym/Calculator-v0", task, vf.TrainClientConfig(base_url=base_url), "smollm2", tokenizer=model_dir
    )
    result["dead"] = {"has_error": episode.traces[0].has_error, "reward": episode.traces[0].reward}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
