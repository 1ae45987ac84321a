"""`ArtEngine`: ART's own inference client (`model.openai_client()`, an `AsyncOpenAI` on the vLLM server ART runs and
syncs its LoRA weights into) as a rollgym `Engine`, token-in/token-out: each turn is a `/v1/completions` request with
the prompt as token ids, the body and the answer rollgym's vLLM client builds and checks (`VLLMServerEngine`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, GenerationTimings, SamplingParams
from rollgym.engines.errors import EngineError
from rollgym.engines.validation import check_context, validate_prompt
from rollgym.engines.vllm_server import VLLMServerEngine

#: the fields of vLLM's completion request that OpenAI's `completions.create` has no argument for
VLLM_ONLY = ("return_token_ids", "stop_token_ids", "skip_special_tokens", "top_k")


class ArtEngine:
    """Samples through ART's `AsyncOpenAI` client as `model` (ART's `model.get_inference_name()`: its latest step)."""

    name = "art"
    token_exact = True

    def __init__(self, client: Any, model: str, *, max_model_len: int | None = None) -> None:
        self.client, self.model, self.max_model_len = client, model, max_model_len
        self._codec = VLLMServerEngine(str(client.base_url), model, max_model_len=max_model_len, discover=False)

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        check_context(len(prompt), max_model_len=self.max_model_len, engine=self.name)
        body = self._codec.request_body(prompt, sampling)
        extra = {k: body.pop(k) for k in VLLM_ONLY if k in body}
        try:
            response = await self.client.completions.create(**body, extra_body=extra)
        except Exception as exc:  # ART's client raises OpenAI's errors (or its proxy's): the turn's engine failed
            raise EngineError(f"ART's inference client failed the request: {type(exc).__name__}: {exc}") from exc
        raw = response.model_dump() if hasattr(response, "model_dump") else response
        generation = self._codec.parse_response(raw, prompt, sampling, GenerationTimings())
        return generation.model_copy(update={"engine": self.name})

    async def aclose(self) -> None:
        return None  # the client is ART's: ART closes it
