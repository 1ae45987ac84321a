"""One sampled turn, recorded by the same code in the rollout loop and in the recording proxy: generate from a
trajectory's next prompt, keep the ids and logprobs as sampled (the fields of a `Turn`), then parse the completion and
append it verbatim to the trajectory. What happens around it (an environment's step, an HTTP answer) is the caller's,
and so is making the `Turn`: once, from all its fields, when the turn ends (one validation per turn)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rollgym.engines.base import Generation, SamplingParams
from rollgym.rollouts.records import Resample
from rollgym.tokenization import ChatTokenizer, ParsedCompletion, TokenTrajectory


async def generate(engine: Any, prompt_ids: list[int], sampling: SamplingParams) -> tuple[Generation, float]:
    """The engine's generation for `prompt_ids` and the seconds it took (an engine failure propagates as it is)."""
    t = time.perf_counter()
    gen = await engine.generate(prompt_ids, sampling)
    return gen, time.perf_counter() - t


def record_turn(
    into: list[dict[str, Any]],
    gen: Generation,
    generate_s: float,
    position: tuple[int, int, Resample | None],
    traj: TokenTrajectory,
    tokenizer: ChatTokenizer,
    tools: list[dict] | None,
    reply: Callable[[dict], dict] | None = None,
    parse: bool = True,
) -> ParsedCompletion | None:
    """Append `gen`'s `Turn` fields to `into` as sampled (its ids, logprobs and weights versions: kept whatever fails
    next), then parse its completion, append it verbatim to `traj` and fill in the turn's message and parse errors.

    `position` is the turn's (index, prompt length, resample). `reply` turns the parsed message into the one the
    conversation continues with (the proxy's answer under `tool_choice`; with `parse=False`, a raw completion's text,
    not parsed as a chat turn); the sampled ids are kept either way. A `TokenizationError` (ids outside the
    vocabulary, a trajectory that has ended) propagates: the turn keeps what was sampled.
    """
    index, prompt_len, resample = position
    turn = {
        "index": index,
        "prompt_len": prompt_len,
        "resample": resample,
        "completion_ids": gen.completion_ids,
        "logprobs": gen.logprobs,
        "finish_reason": gen.finish_reason,
        "generate_s": generate_s,
        "policy_version": gen.policy_version,
        "version_changes": gen.version_changes,
    }
    into.append(turn)
    traj.add_completion(gen.completion_ids, gen.logprobs, gen.finish_reason)  # checks the ids against the vocabulary
    parsed = tokenizer.parse_completion(gen.completion_ids, tools) if parse else None
    meant = parsed.message if parsed is not None else {}
    message = meant if reply is None else reply(meant)
    traj.messages.append(message)  # what the turn meant, for templates whose bridges read history
    turn["message"], turn["parse_errors"] = message, [e.message for e in parsed.errors] if parsed is not None else []
    return parsed
