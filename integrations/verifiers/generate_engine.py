# pyright: reportMissingImports=false
# (verifiers and its renderers are installed where prime-rl runs, not in rollgym's own venv)
"""`PrimeRLGenerateEngine`: prime-rl's inference server, reached the way verifiers' own `TrainClient` reaches it, as a
rollgym `Engine`: every turn is the token-in/token-out request verifiers sends (renderers 0.1.12
`renderers.client.generate`, with rollgym's prompt ids given as its prebuilt `prompt_ids`): POST
`{base}/inference/v1/generate` with `{"model", "token_ids", "sampling_params"}` (`logprobs` 1, `skip_special_tokens`
false, the turn's `max_tokens` and stop ids) through verifiers' own OpenAI client for a `TrainClientConfig`
(`verifiers.v1.clients.base.build_async_openai`), parsed by renderers' own `parse_generate_response` and
`_parse_completion_logprobs` (`choices[0].token_ids`, `choices[0].logprobs.content[i]` = `{"token": "token_id:<id>",
"logprob"}`, `choices[0].finish_reason`). So prime-rl's vLLM and the weights it syncs sample, and the ids are
rollgym's template's, not verifiers' renderer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import EngineError, InvalidOutputError
from rollgym.engines.validation import checked_generation, validate_prompt


class PrimeRLGenerateEngine:
    """Samples through prime-rl's `/inference/v1/generate` for `model` (the name prime-rl serves, a LoRA adapter's
    included), with verifiers' client for `client_config` (a `vf.TrainClientConfig`, or an `AsyncOpenAI` client);
    `extra_sampling` is prime-rl's sampling dict (its temperature, top_p, repetition penalty...), kept per turn."""

    name = "prime-rl"
    token_exact = True

    def __init__(
        self,
        client_config: Any,
        model: str,
        *,
        extra_sampling: dict[str, Any] | None = None,
        max_model_len: int | None = None,
    ) -> None:
        if hasattr(client_config, "post"):
            self.client = client_config
        else:
            from verifiers.v1.clients.base import build_async_openai

            self.client = build_async_openai(client_config)
        self.model, self.max_model_len = model, max_model_len
        self.extra_sampling = dict(extra_sampling or {})
        self.endpoint = str(self.client.base_url).rstrip("/").removesuffix("/v1") + "/inference/v1/generate"

    def body(self, prompt: list[int], sampling: SamplingParams) -> dict[str, Any]:
        """The request body renderers' `generate` posts, for rollgym's prompt ids and this turn's sampling."""
        params: dict[str, Any] = {
            **self.extra_sampling,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k if sampling.top_k > 0 else -1,
            "max_tokens": sampling.max_tokens,
            "stop_token_ids": list(sampling.stop_token_ids),
            "logprobs": 1,
        }
        params.setdefault("skip_special_tokens", False)
        if sampling.seed is not None:
            params["seed"] = sampling.seed
        return {"model": self.model, "token_ids": prompt, "sampling_params": params}

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        import httpx
        from renderers.client import _parse_completion_logprobs, parse_generate_response

        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        try:
            raw = await self.client.post(self.endpoint, cast_to=httpx.Response, body=self.body(prompt, sampling))
        except Exception as exc:  # the OpenAI SDK raises its own errors for a dead or failing server
            raise EngineError(f"prime-rl's inference server failed the request: {type(exc).__name__}: {exc}") from exc
        try:
            data = parse_generate_response(raw.content)
            choice = (data.get("choices") or [{}])[0]
            ids = [int(t) for t in choice.get("token_ids") or []]
            logprobs = _parse_completion_logprobs(choice, ids)
        except Exception as exc:  # renderers' MalformedGenerateResponseError, or not JSON at all
            raise InvalidOutputError(f"prime-rl's inference server answered malformed output: {exc}") from exc
        reason = choice.get("finish_reason")
        finish = "length" if reason == "length" else "abort" if reason == "abort" else "stop"
        stop = ids[-1] if finish == "stop" and ids and ids[-1] in set(sampling.stop_token_ids) else None
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling,
            completion_ids=ids,
            logprobs=logprobs,
            finish_reason=finish,
            stop_token_id=stop,
            prompt_ids=prompt,
        )

    async def aclose(self) -> None:
        await self.client.close()
