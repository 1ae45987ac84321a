"""An instant OpenAI-compatible model server for measuring frameworks, not models: every answer is ready at once.

`python instant_server.py --ids IDS.json` serves on a free loopback port (printed as `PORT n` on stdout) until it
is terminated. Its "model" calls `add(a=k, b=2)` with a server-wide counter k, so every tool result differs and no
cache in a framework can answer for it. Three dialects, as the frameworks speak them:
- `POST /v1/completions` with token ids (vLLM's token-in/token-out fields: `token_ids`, `prompt_token_ids`,
  `logprobs.token_logprobs`, `stop_reason`): the call's ids are built from IDS.json (the call's head and tail and
  one id per digit, from the benchmark's tokenizer), so a token-exact client parses them back to the same call;
- `POST /v1/chat/completions` with `tools`: a structured `tool_calls` message (as vLLM with
  `--enable-auto-tool-choice --tool-call-parser hermes` answers);
- `POST /v1/chat/completions` without `tools`: the same call as Hermes text in `content` (text-action envs).
`GET /v1/models` lists one model with its `max_model_len`. On aiohttp.web: at 1,024
concurrent clients this process must stay cheaper than the frameworks it serves (it runs on its own core).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time

from aiohttp import web

MODEL = "instant"
MAX_MODEL_LEN = 32768


def build_app(ids: dict, delay_s: float = 0.0) -> web.Application:
    head, tail, digits, stop = ids["head"], ids["tail"], ids["digits"], ids["stop"]
    state = {"k": 0}

    def next_k() -> int:
        state["k"] += 1
        return state["k"]

    def call_ids(k: int) -> list[int]:
        return head + [digits[d] for d in str(k)] + tail + [stop]

    async def models(_request: web.Request) -> web.Response:
        card = {"id": MODEL, "object": "model", "owned_by": "bench", "max_model_len": MAX_MODEL_LEN}
        return web.json_response({"object": "list", "data": [card]})

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        if delay_s:
            await asyncio.sleep(delay_s)
        k = next_k()
        out = call_ids(k)[: int(body.get("max_tokens") or 16)]
        choice = {
            "index": 0,
            "text": f'<tool_call>\n{{"name": "add", "arguments": {{"a": {k}, "b": 2}}}}\n</tool_call>',
            "token_ids": out,
            "prompt_token_ids": body["prompt"],
            "logprobs": {"token_logprobs": [-0.5] * len(out)},
            "finish_reason": "stop" if out[-1] == stop else "length",
            "stop_reason": stop if out[-1] == stop else None,
        }
        usage = {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(out)}
        return web.json_response(
            {
                "id": f"cmpl-{k}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": MODEL,
                "choices": [choice],
                "usage": usage,
            }
        )

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        k = next_k()
        arguments = json.dumps({"a": k, "b": 2})
        n_tokens = len(call_ids(k))
        if body.get("tools"):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{k}", "type": "function", "function": {"name": "add", "arguments": arguments}}
                ],
            }
            finish = "tool_calls"
        else:
            text = f'<tool_call>\n{{"name": "add", "arguments": {arguments}}}\n</tool_call>'
            message, finish = {"role": "assistant", "content": text}, "stop"
        prompt_tokens = sum(len(str(m.get("content") or "")) // 4 for m in body.get("messages", []))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": n_tokens,
            "total_tokens": prompt_tokens + n_tokens,
        }
        if body.get("stream"):
            return await stream_chat(request, k, message, finish, usage, bool(body.get("stream_options")))
        return web.json_response(
            {
                "id": f"chatcmpl-{k}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": MODEL,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": n_tokens,
                    "total_tokens": prompt_tokens + n_tokens,
                },
            }
        )

    async def stream_chat(request, k: int, message: dict, finish: str, usage: dict, with_usage: bool):
        """The same answer as server-sent events, as OpenAI streams it: the message in one delta (tool calls with
        their index), then the finish reason, then the usage when asked (`stream_options.include_usage`), then
        `[DONE]`."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        head = {"id": f"chatcmpl-{k}", "object": "chat.completion.chunk", "created": int(time.time()), "model": MODEL}
        delta = dict(message)
        if "tool_calls" in delta:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
        chunks = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ]
        if with_usage:
            chunks.append({**head, "choices": [], "usage": usage})
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", required=True, help="JSON: head, tail (id lists), digits ('0'..'9' -> id), stop")
    parser.add_argument("--delay", type=float, default=0.0, help="hold each completion this long (seconds)")
    args = parser.parse_args()
    with open(args.ids) as f:
        ids = json.load(f)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    web.run_app(build_app(ids, args.delay), sock=sock, print=None, access_log=None, backlog=4096, handle_signals=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
