"""`VerlServerEngine`: verl's own inference client as a rollgym `Engine`, so verl's servers (and the weights verl
syncs into them) sample every turn while rollgym's loop drives the episode, token-in/token-out.

verl 0.9's `LLMServerClient.generate(request_id, *, prompt_ids, sampling_params) -> TokenOutput`
(verl/workers/rollout/llm_server.py) answers with `token_ids`, `log_probs` (when asked), `stop_reason`
('completed', 'aborted' or None) and `extra_fields["global_steps"]`, the trainer step whose weights sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import EngineError, InvalidOutputError
from rollgym.engines.validation import checked_generation, validate_prompt


class VerlServerEngine:
    """Samples through verl's `server_manager` for one rollout (one sticky `request_id`, so verl routes every turn to
    the same server and its prefix cache). `response_length` caps each turn to what is left of verl's response
    budget, counted from the first prompt, as verl's own servers cap a request that names no `max_tokens`."""

    name = "verl"
    token_exact = True

    def __init__(
        self,
        server_manager: Any,
        *,
        request_id: str,
        model: str = "verl",
        response_length: int | None = None,
        max_model_len: int | None = None,
        extra_sampling: dict[str, Any] | None = None,
    ) -> None:
        self.server_manager, self.request_id, self.model = server_manager, request_id, model
        self.response_length, self.max_model_len = response_length, max_model_len
        self.extra_sampling = dict(extra_sampling or {})
        self.first_prompt_len: int | None = None

    def sampling_params(self, prompt_len: int, sampling: SamplingParams) -> dict[str, Any]:
        """verl's (vLLM's) sampling dict for one turn; logprobs are always asked for (rollgym records them)."""
        max_tokens = sampling.max_tokens
        if self.response_length is not None:
            first = self.first_prompt_len if self.first_prompt_len is not None else prompt_len
            max_tokens = max(1, min(max_tokens, first + self.response_length - prompt_len))
        params: dict[str, Any] = {
            **self.extra_sampling,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k if sampling.top_k > 0 else -1,
            "max_tokens": max_tokens,
            "logprobs": True,
        }
        if sampling.stop_token_ids:
            params["stop_token_ids"] = list(sampling.stop_token_ids)
        if sampling.seed is not None:
            params["seed"] = sampling.seed
        return params

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        if self.first_prompt_len is None:
            self.first_prompt_len = len(prompt)
        params = self.sampling_params(len(prompt), sampling)
        try:
            out = await self.server_manager.generate(self.request_id, prompt_ids=list(prompt), sampling_params=params)
        except EngineError:
            raise
        except Exception as exc:  # verl's client raises whatever its server or Ray raised
            raise EngineError(f"verl's server failed the request: {type(exc).__name__}: {exc}") from exc
        ids = [int(t) for t in out.token_ids]
        if out.log_probs is None and (ids or out.stop_reason != "aborted"):
            raise InvalidOutputError("verl's server returned no log_probs though the request asked for them")
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling.model_copy(update={"max_tokens": params["max_tokens"]}),
            completion_ids=ids,
            logprobs=list(out.log_probs or []),
            **_finish(ids, out.stop_reason, params["max_tokens"], sampling.stop_token_ids),
            prompt_ids=prompt,
            policy_version=_version(out.extra_fields),
        )

    async def aclose(self) -> None:
        return None


def _finish(ids: list[int], stop_reason: str | None, max_tokens: int, stop_ids: Sequence[int]) -> dict[str, Any]:
    """rollgym's finish reason from verl's: verl folds vLLM's 'stop' and 'length' into 'completed', so which one it
    was is read off the ids (a stop id last, or the budget used up)."""
    if stop_reason == "aborted":
        return {"finish_reason": "abort", "stop_token_id": None}
    if ids and ids[-1] in set(stop_ids):
        return {"finish_reason": "stop", "stop_token_id": ids[-1]}
    return {"finish_reason": "length" if len(ids) >= max_tokens else "stop", "stop_token_id": None}


def _version(extra_fields: dict[str, Any] | None) -> int | None:
    steps = (extra_fields or {}).get("global_steps")
    return int(steps) if isinstance(steps, int | float) and not isinstance(steps, bool) else None
