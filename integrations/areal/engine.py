# pyright: reportMissingImports=false
"""`AReaLEngine`: AReaL's own inference engine (the `engine` its workflows are handed) as a rollgym `Engine`, so
AReaL's servers (and the weights it syncs into them, with their versions) sample every turn while rollgym's loop
drives the episode, token-in/token-out.

AReaL 1.0.4's `InferenceEngine.agenerate(ModelRequest) -> ModelResponse` (areal/api/engine_api.py:620,
areal/api/io_struct.py:28-84; the remote engines' loop in areal/infra/remote_inf_engine.py:781-946): the request
holds `rid` (one per rollout, so every turn goes to the same server and its KV cache), `input_ids`, `gconfig`
(`GenerationHyperparameters` with `n_samples=1`) and the tokenizer; the response holds `input_tokens`,
`output_tokens`, `output_logprobs`, `output_versions` (the weights version of each output id: a weights update can
land mid-completion, AReaL resumes the request) and `stop_reason` ("stop", "length", "tool_calls" or "abort").
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from rollgym.engines.base import Generation, SamplingParams, VersionChange
from rollgym.engines.errors import EngineError, InvalidOutputError
from rollgym.engines.validation import checked_generation, validate_prompt


class AReaLEngine:
    """Samples through AReaL's `engine.agenerate` for one rollout: AReaL's `gconfig` per turn (its temperature,
    top_p, top_k, greedy and stop strings stay AReaL's), with that turn's `max_new_tokens` and rollgym's stop ids."""

    name = "areal"
    token_exact = True

    def __init__(self, engine: Any, gconfig: Any, *, tokenizer: Any = None, rid: str | None = None) -> None:
        self.engine, self.gconfig, self.tokenizer = engine, gconfig, tokenizer
        self.rid = rid or uuid.uuid4().hex
        self.model = "areal"
        self.max_model_len: int | None = getattr(gconfig, "max_tokens", None)

    def request(self, prompt: list[int], sampling: SamplingParams) -> Any:
        """AReaL's `ModelRequest` for one turn."""
        from areal.api.io_struct import ModelRequest

        stops = list(dict.fromkeys([*(self.gconfig.stop_token_ids or []), *sampling.stop_token_ids]))
        gconfig = self.gconfig.new(n_samples=1, max_new_tokens=sampling.max_tokens, stop_token_ids=stops)
        return ModelRequest(rid=self.rid, input_ids=list(prompt), gconfig=gconfig, tokenizer=self.tokenizer)

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        try:
            resp = await self.engine.agenerate(self.request(prompt, sampling))
        except EngineError:
            raise
        except Exception as exc:  # AReaL's engine raises whatever its servers or HTTP retries raised
            raise EngineError(f"AReaL's inference engine failed the request: {type(exc).__name__}: {exc}") from exc
        ids = [int(t) for t in resp.output_tokens]
        if len(resp.output_logprobs) != len(ids):
            raise InvalidOutputError(
                f"AReaL's engine returned {len(resp.output_logprobs)} output_logprobs for {len(ids)} output_tokens"
            )
        if list(resp.input_tokens) != prompt:
            raise InvalidOutputError("AReaL's engine answered a different prompt (input_tokens) than it was sent")
        first, changes = _versions(list(resp.output_versions or []))
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling,
            completion_ids=ids,
            logprobs=[float(lp) for lp in resp.output_logprobs],
            **_finish(ids, resp.stop_reason, sampling.stop_token_ids),
            prompt_ids=prompt,
            policy_version=first,
            version_changes=changes,
        )

    async def aclose(self) -> None:
        return None


def _finish(ids: list[int], stop_reason: str, stop_ids: Sequence[int]) -> dict[str, Any]:
    """rollgym's finish reason from AReaL's ("tool_calls" is a stop; the stop id is read off the ids)."""
    if stop_reason in ("length", "abort"):
        return {"finish_reason": stop_reason, "stop_token_id": None}
    stop = ids[-1] if ids and ids[-1] in set(stop_ids) else None
    return {"finish_reason": "stop", "stop_token_id": stop}


def _versions(per_token: list[int]) -> tuple[int | None, list[VersionChange]]:
    """The version of the first output id and where another took over (AReaL's -1: unknown)."""
    known = [(i, int(v)) for i, v in enumerate(per_token) if v is not None and int(v) >= 0]
    if not known:
        return None, []
    first, changes, current = known[0][1], [], known[0][1]
    for i, version in known[1:]:
        if version != current:
            changes.append(VersionChange(at=i, version=version))
            current = version
    return (first if known[0][0] == 0 else None), changes
