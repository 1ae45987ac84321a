"""`OpenRLHFEngine`: OpenRLHF's own rollout engine (the `llm_engine` an agent executor is handed) as a rollgym
`Engine`, so OpenRLHF's vLLM (and the weights it syncs into it) samples every turn while rollgym's loop drives the
episode, token-in/token-out.

OpenRLHF 0.11's `RolloutRayActor.generate(prompt_token_ids, sampling_params, multi_modal_data=None)`
(openrlhf/trainer/ray/vllm_engine.py:153-176) returns vLLM's final `RequestOutput`; an executor reads
`outputs[0].token_ids`, `.finish_reason` ('stop', 'length' or 'abort') and `.logprobs`, one dict per sampled id
mapping ids to `Logprob(logprob=...)` (openrlhf/utils/agent.py:94-98, 157-162). `sampling_params` is OpenRLHF's
`vllm.SamplingParams` (samples_generator.py:199-207): its temperature, top_p and top_k stay OpenRLHF's.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import EngineError, InvalidOutputError
from rollgym.engines.validation import checked_generation, validate_prompt


class OpenRLHFEngine:
    """Samples through OpenRLHF's `llm_engine` with a copy of OpenRLHF's sampling params per turn, each turn's
    `max_tokens`, stop ids and seed set by rollgym's loop and logprobs always asked for (rollgym records them)."""

    name = "openrlhf"
    token_exact = True

    def __init__(
        self, llm_engine: Any, sampling_params: Any, *, model: str = "openrlhf", max_model_len: int | None = None
    ) -> None:
        self.llm_engine, self.base_params, self.model = llm_engine, sampling_params, model
        self.max_model_len = max_model_len

    def sampling_params(self, sampling: SamplingParams) -> Any:
        """OpenRLHF's params for one turn (a deep copy: OpenRLHF shares one object across a prompt's samples)."""
        params = copy.deepcopy(self.base_params)
        params.max_tokens = sampling.max_tokens
        if getattr(params, "logprobs", None) is None:
            params.logprobs = 1
        if sampling.stop_token_ids:
            known = list(getattr(params, "stop_token_ids", None) or [])
            params.stop_token_ids = list(dict.fromkeys([*known, *sampling.stop_token_ids]))
        if sampling.seed is not None:
            params.seed = sampling.seed
        return params

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        params = self.sampling_params(sampling)
        try:
            out = await self.llm_engine.generate(list(prompt), params, multi_modal_data=None)
        except EngineError:
            raise
        except Exception as exc:  # OpenRLHF's engine raises whatever vLLM or Ray raised
            raise EngineError(f"OpenRLHF's engine failed the request: {type(exc).__name__}: {exc}") from exc
        try:
            completion = out.outputs[0]
        except (AttributeError, IndexError, TypeError):
            raise InvalidOutputError(
                "OpenRLHF's engine returned no completion (RequestOutput.outputs is empty)"
            ) from None
        ids = [int(t) for t in completion.token_ids]
        if completion.logprobs is None and ids:
            raise InvalidOutputError("OpenRLHF's engine returned no logprobs though the request asked for them")
        logprobs = [_sampled_logprob(entry, t) for entry, t in zip(completion.logprobs or [], ids, strict=False)]
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling,
            completion_ids=ids,
            logprobs=logprobs,
            **_finish(ids, completion.finish_reason, sampling.stop_token_ids),
            prompt_ids=prompt,
        )

    async def aclose(self) -> None:
        return None


def _sampled_logprob(entry: dict[int, Any], token_id: int) -> float | None:
    """The logprob of the sampled id from vLLM's per-position dict (`Logprob.logprob`, or a bare float)."""
    value = entry.get(token_id) if isinstance(entry, dict) else None
    if value is None:
        return None
    return float(getattr(value, "logprob", value))


def _finish(ids: list[int], finish_reason: str | None, stop_ids: Sequence[int]) -> dict[str, Any]:
    """rollgym's finish reason from vLLM's; the stop id is read off the ids (vLLM keeps it last)."""
    if finish_reason == "abort":
        return {"finish_reason": "abort", "stop_token_id": None}
    if finish_reason == "length":
        return {"finish_reason": "length", "stop_token_id": None}
    stop = ids[-1] if ids and ids[-1] in set(stop_ids) else None
    return {"finish_reason": "stop", "stop_token_id": stop}
