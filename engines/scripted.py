"""ScriptedEngine: a deterministic policy that emits exact token sequences, through the real interface.

For tests, demos and overhead benchmarks: it "samples" what a script says (a list of completions, or a
function of the prompt), honours `max_tokens` and stop ids like a real engine, and returns its output
through the same validation every engine uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import EngineError
from rollgym.engines.validation import checked_generation, validate_prompt

Policy = Callable[[list[int], SamplingParams], Sequence[int]]


class ScriptedEngine:
    """Replays scripted completions; `policy(prompt_ids, sampling)` decides, or a fixed list in order."""

    name = "scripted"
    token_exact = True

    def __init__(
        self,
        script: Sequence[Sequence[int]] | Policy,
        *,
        model: str = "scripted",
        max_model_len: int | None = None,
        logprob: float = -0.5,
        delay_s: float = 0.0,
    ) -> None:
        self._policy = script if callable(script) else None
        self._queue = None if callable(script) else [list(c) for c in script]
        self.model, self.max_model_len, self.logprob, self.delay_s = model, max_model_len, logprob, delay_s
        self.calls = 0

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams | None = None) -> Generation:
        sampling = sampling or SamplingParams()
        prompt = validate_prompt(prompt_ids, max_model_len=self.max_model_len, engine=self.name)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.calls += 1
        if self._policy is not None:
            planned = list(self._policy(prompt, sampling))
        elif self._queue:
            planned = self._queue.pop(0)
        else:
            raise EngineError("ScriptedEngine: the script has no completions left")
        out, finish, stop_id = [], "length", None
        stops = set(sampling.stop_token_ids)
        for tok in planned:
            if len(out) == sampling.max_tokens:
                break
            out.append(tok)
            if tok in stops:
                finish, stop_id = "stop", tok
                break
        else:
            if len(out) < sampling.max_tokens:
                finish = "stop"  # the script ended: a completion that stopped without a stop id
        return checked_generation(
            engine=self.name,
            model=self.model,
            sampling=sampling,
            completion_ids=out,
            logprobs=[self.logprob] * len(out),
            finish_reason=finish,
            stop_token_id=stop_id,
            prompt_ids=prompt,
        )

    async def aclose(self) -> None:
        return None
