"""`SlimeRouterEngine`: slime's own rollout server (its sglang router's `/generate`) as a rollgym `Engine`, so slime's
sglang engines (and the weights slime syncs into them) sample every turn while rollgym's loop drives the episode,
token-in/token-out.

The request and response are those slime's own `generate` sends and reads (THUDM/slime 624b824,
slime/rollout/sglang_rollout.py:152-221): POST `{"input_ids", "sampling_params", "return_logprob": true}` to
`http://{sglang_router_ip}:{sglang_router_port}/generate` through slime's `post` (slime/utils/http_utils.py:291),
with the `X-SMG-Routing-Key` header when the router hashes by session; the answer's `meta_info.output_token_logprobs`
is `[logprob, token_id, text]` per sampled id, `meta_info.finish_reason.type` is "stop", "length" or "abort" and
`meta_info.weight_version` the weights version (slime/utils/types.py:397-415; sglang 0.5.23
srt/managers/tokenizer_manager.py:2507-2512, 3105-3116).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import EngineError, InvalidOutputError
from rollgym.engines.validation import checked_generation, validate_prompt

#: slime's `post(url, payload, headers=None) -> dict` (slime.utils.http_utils.post)
Post = Callable[..., Awaitable[dict[str, Any]]]


class SlimeRouterEngine:
    """Samples through slime's router for one rollout: slime's sampling dict per turn (its temperature, top_p, top_k,
    stop strings and `no_stop_trim` stay slime's), each turn's `max_new_tokens` at most what is left of slime's
    response budget counted from the first prompt (as slime's `generate` subtracts `response_length`), rollgym's stop
    ids added, logprobs always asked for."""

    name = "slime"
    token_exact = True

    def __init__(
        self,
        url: str,
        sampling_params: dict[str, Any],
        *,
        post: Post,
        headers: dict[str, str] | None = None,
        model: str = "slime",
        max_model_len: int | None = None,
    ) -> None:
        self.url, self.base_params, self.post, self.headers = url, dict(sampling_params), post, headers
        self.model, self.max_model_len = model, max_model_len
        self.response_budget = int(self.base_params.get("max_new_tokens") or 0) or None
        self.first_prompt_len: int | None = None

    def sampling_params(self, prompt_len: int, sampling: SamplingParams) -> dict[str, Any]:
        """sglang's sampling dict for one turn."""
        max_new = sampling.max_tokens
        if self.response_budget is not None:
            first = self.first_prompt_len if self.first_prompt_len is not None else prompt_len
            max_new = max(1, min(max_new, first + self.response_budget - prompt_len))
        params = {**self.base_params, "max_new_tokens": max_new}
        if sampling.stop_token_ids:
            known = list(params.get("stop_token_ids") or [])
            params["stop_token_ids"] = list(dict.fromkeys([*known, *sampling.stop_token_ids]))
        if sampling.seed is not None:
            params["sampling_seed"] = sampling.seed
        return params

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        if self.first_prompt_len is None:
            self.first_prompt_len = len(prompt)
        params = self.sampling_params(len(prompt), sampling)
        payload = {"input_ids": list(prompt), "sampling_params": params, "return_logprob": True}
        try:
            out = await self.post(self.url, payload, headers=self.headers)
        except EngineError:
            raise
        except Exception as exc:  # slime's post raises whatever its HTTP client or Ray raised, after its retries
            raise EngineError(f"slime's router failed the request: {type(exc).__name__}: {exc}") from exc
        meta = out.get("meta_info") if isinstance(out, dict) else None
        if not isinstance(meta, dict):
            raise InvalidOutputError("slime's router answered without meta_info (not sglang's /generate response)")
        entries = meta.get("output_token_logprobs")
        reason = (meta.get("finish_reason") or {}).get("type")
        if entries is None and reason != "abort":
            raise InvalidOutputError("slime's router returned no output_token_logprobs though return_logprob was set")
        ids = [int(entry[1]) for entry in entries or []]
        logprobs = [None if entry[0] is None else float(entry[0]) for entry in entries or []]
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling.model_copy(update={"max_tokens": params["max_new_tokens"]}),
            completion_ids=ids,
            logprobs=logprobs,
            **_finish(ids, reason, sampling.stop_token_ids, meta.get("finish_reason") or {}),
            prompt_ids=prompt,
            policy_version=_version(meta.get("weight_version")),
        )

    async def aclose(self) -> None:
        return None


def _finish(ids: list[int], reason: str | None, stop_ids: Sequence[int], finish: dict[str, Any]) -> dict[str, Any]:
    """rollgym's finish reason from sglang's `finish_reason` (`matched` is the stop id, kept last by `no_stop_trim`)."""
    if reason == "abort":
        return {"finish_reason": "abort", "stop_token_id": None}
    if reason == "length":
        return {"finish_reason": "length", "stop_token_id": None}
    matched = finish.get("matched")
    stop = ids[-1] if ids and (ids[-1] == matched or ids[-1] in set(stop_ids)) else None
    return {"finish_reason": "stop", "stop_token_id": stop}


def _version(value: Any) -> int | None:
    """slime's weights versions are step numbers as strings (`weight_version=str(step)`); anything else is unknown."""
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None
