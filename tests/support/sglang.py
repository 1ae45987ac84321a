"""A stand-in for sglang's `/generate` HTTP endpoint (what slime's router forwards to), sampling with a rollgym engine
(the real SmolLM2-135M in-process, or a scripted one): sglang needs a GPU and does not run here.

Field for field as sglang 0.5.23 answers a token-in request (srt/managers/io_struct.py `GenerateReqInput`:
`input_ids`, `sampling_params`, `return_logprob`; srt/managers/tokenizer_manager.py:2507-2560 and 3105-3116):
`{"text", "output_ids", "meta_info": {"id", "finish_reason": {"type": "stop", "matched": id} | {"type": "length",
"length": n} | {"type": "abort", "message"}, "prompt_tokens", "completion_tokens", "cached_tokens", "weight_version",
"output_token_logprobs": [[logprob, id, None], ...]}}`; `max_new_tokens`, `stop_token_ids`, `temperature`, `top_p`,
`top_k` (-1 off) and `sampling_seed` are read from `sampling_params`, and the stop id is kept last (`no_stop_trim`).
"""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from rollgym.engines.base import SamplingParams


class SglangStandIn:
    """`async with SglangStandIn(engine) as (host, port)`: serves `/generate` on loopback; `requests` holds every
    request body, `weight_version` is what `meta_info.weight_version` says (sglang's `--weight-version`)."""

    def __init__(self, engine: Any, *, weight_version: str = "default", abort: bool = False) -> None:
        self.engine, self.weight_version, self.abort = engine, weight_version, abort
        self.requests: list[dict[str, Any]] = []
        self.runner: web.AppRunner | None = None

    async def generate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({**body, "headers": dict(request.headers)})
        rid = uuid.uuid4().hex
        if self.abort:
            meta = {"id": rid, "finish_reason": {"type": "abort", "message": "aborted"}, "prompt_tokens": 0}
            return web.json_response({"text": "", "output_ids": [], "meta_info": meta})
        params = body["sampling_params"]
        top_k = int(params.get("top_k", -1))
        sampling = SamplingParams(
            temperature=float(params.get("temperature", 1.0)),
            top_p=float(params.get("top_p", 1.0)),
            top_k=top_k if top_k > 0 else 0,
            max_tokens=int(params["max_new_tokens"]),
            stop_token_ids=list(params.get("stop_token_ids") or []),
            seed=params.get("sampling_seed"),
        )
        out = await self.engine.generate(body["input_ids"], sampling)
        if out.finish_reason == "length":
            finish = {"type": "length", "length": len(out.completion_ids)}
        else:
            finish = {"type": "stop", "matched": out.stop_token_id}
        meta = {
            "id": rid,
            "finish_reason": finish,
            "prompt_tokens": len(body["input_ids"]),
            "weight_version": self.weight_version,
            "completion_tokens": len(out.completion_ids),
            "cached_tokens": out.timings.cached_tokens,
        }
        if body.get("return_logprob"):
            meta["output_token_logprobs"] = [
                [lp, t, None] for lp, t in zip(out.logprobs, out.completion_ids, strict=True)
            ]
        return web.json_response({"text": "", "output_ids": out.completion_ids, "meta_info": meta})

    async def __aenter__(self) -> tuple[str, int]:
        app = web.Application()
        app.router.add_post("/generate", self.generate)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr] - a started TCPSite has its server
        return "127.0.0.1", port

    async def __aexit__(self, *exc: Any) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
