"""`SkyRLClientEngine`: SkyRL's own inference client as a rollgym `Engine`, so SkyRL's engines (and the weights SkyRL
syncs into them) sample every turn while rollgym's loop drives the episode, token-in/token-out.

SkyRL 0.4's `InferenceEngineInterface.generate(InferenceEngineInput, model=None) -> InferenceEngineOutput`
(skyrl/backends/skyrl_train/inference_servers/base.py) takes `prompt_token_ids`, `session_ids` and vLLM-style
`sampling_params`, and answers with `response_ids`, `stop_reasons` (vLLM's 'stop', 'length', 'abort') and
`response_logprobs` (when `logprobs` is asked for); the client's `weight_version`, where it has one, is the policy
version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import EngineError, InvalidOutputError
from rollgym.engines.validation import checked_generation, validate_prompt


class SkyRLClientEngine:
    """Samples through SkyRL's `inference_engine_client` for one rollout (one `session_id`, so SkyRL routes every turn
    of it to the same engine and its prefix cache)."""

    name = "skyrl"
    token_exact = True

    def __init__(
        self,
        client: Any,
        *,
        session_id: str,
        model: str | None = None,
        max_model_len: int | None = None,
        extra_sampling: dict[str, Any] | None = None,
    ) -> None:
        self.client, self.session_id, self.max_model_len = client, session_id, max_model_len
        self.model = model or str(getattr(client, "model_name", "skyrl"))
        self.extra_sampling = dict(extra_sampling or {})

    def sampling_params(self, sampling: SamplingParams) -> dict[str, Any]:
        """vLLM's sampling dict for one turn; the sampled ids' logprobs are always asked for (rollgym records them)."""
        params: dict[str, Any] = {
            **self.extra_sampling,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k if sampling.top_k > 0 else -1,
            "max_tokens": sampling.max_tokens,
            "logprobs": 0,
        }
        if sampling.stop_token_ids:
            params["stop_token_ids"] = list(sampling.stop_token_ids)
        if sampling.seed is not None:
            params["seed"] = sampling.seed
        return params

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        request = {
            "prompt_token_ids": [list(prompt)],
            "session_ids": [self.session_id],
            "sampling_params": self.sampling_params(sampling),
        }
        try:
            out = await self.client.generate(request)
        except EngineError:
            raise
        except Exception as exc:  # SkyRL's client raises whatever its engine or Ray raised
            raise EngineError(f"SkyRL's inference engine failed the request: {type(exc).__name__}: {exc}") from exc
        ids = [int(t) for t in out["response_ids"][0]]
        stop = out["stop_reasons"][0]
        logprobs = (out.get("response_logprobs") or [None])[0]
        if logprobs is None and (ids or stop != "abort"):
            raise InvalidOutputError("SkyRL's engine returned no response_logprobs though the request asked for them")
        finish = stop if stop in ("stop", "length", "abort") else "stop"
        stop_id = ids[-1] if finish == "stop" and ids and ids[-1] in set(sampling.stop_token_ids) else None
        version = getattr(self.client, "weight_version", None)
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling,
            completion_ids=ids,
            logprobs=list(logprobs or []),
            finish_reason=finish,
            stop_token_id=stop_id,
            prompt_ids=prompt,
            policy_version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        )

    async def aclose(self) -> None:
        return None
