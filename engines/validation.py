"""The checks every engine runs on its input and its own output, in one place.

An engine never passes on a NaN logprob, a length mismatch or a prompt echo that differs from
what was sent: it raises `InvalidOutputError` saying which engine broke which rule.
"""

from __future__ import annotations

import math
import operator
import sys
from array import array
from collections.abc import Sequence
from typing import TypeGuard, cast

from rollgym.engines.base import Generation, SamplingParams
from rollgym.engines.errors import BadRequestError, ContextOverflowError, InvalidOutputError

# A processed logprob is <= 0; allow float rounding (log_softmax of a one-hot row can give +1e-7).
_LOGPROB_SLACK = 1e-4


def validate_prompt(
    prompt_ids: Sequence[int], *, max_model_len: int | None, vocab_size: int | None = None, engine: str = "engine"
) -> list[int]:
    """Return the prompt as a list of plain ints, or raise a clear `BadRequestError`."""
    if isinstance(prompt_ids, (str, bytes, bytearray, memoryview)):
        raise BadRequestError(f"{engine}: prompt_ids must be a sequence of token ids, not {type(prompt_ids).__name__}")
    if type(prompt_ids) is _token_ids_type():  # from a trajectory: every id is a plain int >= 0 already, and the
        ids = cast(list[int], prompt_ids)  # list is the trajectory's fresh one for this request: no copy
    else:
        if not hasattr(prompt_ids, "__len__"):  # an iterator: read it once
            prompt_ids = list(prompt_ids)
        try:  # one C pass: every id is an integer (bools and numpy ints included) and none is negative
            ids = array("Q", prompt_ids).tolist()
        except (TypeError, OverflowError, ValueError):
            ids = _explain_bad_prompt(prompt_ids, engine)
    if not ids:
        raise BadRequestError(f"{engine}: the prompt is empty; pass at least one token id")
    if vocab_size is not None and max(ids) >= vocab_size:
        raise BadRequestError(
            f"{engine}: token ids must be >= 0 and < vocab size {vocab_size}; "
            f"got {[t for t in ids if t >= vocab_size][:5]}"
        )
    check_context(len(ids), max_model_len=max_model_len, engine=engine)
    return ids


def _token_ids_type() -> type | None:
    """`rollgym.tokenization.TokenIds`, looked up without importing the tokenization layer (and with it
    transformers) into processes that only sample: while it is not loaded, no `TokenIds` exists."""
    module = sys.modules.get("rollgym.tokenization.trajectory")
    return getattr(module, "TokenIds", None)


def _explain_bad_prompt(prompt_ids: Sequence[int], engine: str) -> list[int]:
    """The slow path of `validate_prompt`: name what is wrong (a non-integer, a negative or huge id)."""
    try:
        ids = list(map(operator.index, prompt_ids))
    except TypeError as exc:
        raise BadRequestError(f"{engine}: prompt_ids must be a sequence of integer token ids ({exc})") from None
    bad = [t for t in ids if not 0 <= t < 2**64]
    if bad:
        raise BadRequestError(f"{engine}: token ids must be >= 0 (and fit in 64 bits); got {bad[:5]}")
    return ids


def check_context(prompt_len: int, *, max_model_len: int | None, engine: str = "engine") -> None:
    """Raise `ContextOverflowError` unless the prompt leaves room for at least one generated token."""
    if max_model_len is not None and prompt_len + 1 > max_model_len:
        raise ContextOverflowError(
            f"{engine}: the prompt has {prompt_len} tokens but the model's context is {max_model_len} tokens, "
            f"leaving no room to generate; shorten the prompt to at most {max_model_len - 1} tokens"
        )


def _all_numbers(logprobs: Sequence[float | None]) -> TypeGuard[Sequence[float]]:
    """True when every logprob is a plain float or int (so none is None)."""
    return set(map(type, logprobs)) <= {float, int}


def _all_finite_logprobs(logprobs: Sequence[float | None]) -> bool:
    """True when every logprob is a finite number <= 0 (+slack); a C-speed check for the common case."""
    if not logprobs:
        return True
    if not _all_numbers(logprobs):
        return False
    return math.isfinite(sum(logprobs)) and max(logprobs) <= _LOGPROB_SLACK


def validate_output(
    *,
    engine: str,
    completion_ids: Sequence[int],
    logprobs: Sequence[float | None],
    finish_reason: str,
    sampling: SamplingParams,
    sent_prompt: Sequence[int] | None = None,
    echoed_prompt: Sequence[int] | None = None,
) -> None:
    """Raise `InvalidOutputError` unless the output keeps the `Generation` contract."""
    if len(completion_ids) != len(logprobs):
        raise InvalidOutputError(
            f"{engine}: {len(completion_ids)} completion ids but {len(logprobs)} logprobs; they must pair one to one"
        )
    if not _all_finite_logprobs(logprobs):  # fast path above; this names the first offender
        for i, lp in enumerate(logprobs):
            if lp is None or not isinstance(lp, (int, float)) or not math.isfinite(lp):
                raise InvalidOutputError(
                    f"{engine}: logprob {i} (token {completion_ids[i]}) is {lp!r}, not a finite number; "
                    "a NaN/inf logprob would corrupt importance weights, so it is never passed on"
                )
            if lp > _LOGPROB_SLACK:
                raise InvalidOutputError(f"{engine}: logprob {i} is {lp}, but a log-probability is <= 0")
    if completion_ids and (not set(map(type, completion_ids)) <= {int} or min(completion_ids) < 0):
        raise InvalidOutputError(f"{engine}: completion ids must be non-negative integers")
    if finish_reason not in ("stop", "length", "abort"):
        raise InvalidOutputError(f"{engine}: unknown finish_reason {finish_reason!r} (expected stop, length or abort)")
    if len(completion_ids) > sampling.max_tokens:
        raise InvalidOutputError(
            f"{engine}: {len(completion_ids)} tokens returned but max_tokens was {sampling.max_tokens}"
        )
    if not completion_ids and finish_reason != "abort":
        raise InvalidOutputError(f"{engine}: no tokens returned but finish_reason is {finish_reason!r}")
    if echoed_prompt is not None and sent_prompt is not None and list(echoed_prompt) != list(sent_prompt):
        first = next(
            (i for i, (a, b) in enumerate(zip(echoed_prompt, sent_prompt, strict=False)) if a != b),
            min(len(echoed_prompt), len(sent_prompt)),
        )
        raise InvalidOutputError(
            f"{engine}: the prompt the engine echoed differs from the one sent (first difference at position {first}; "
            f"sent {len(sent_prompt)} ids, echoed {len(echoed_prompt)}); the completion would be aligned to the wrong context"
        )


def checked_generation(
    *,
    engine: str,
    model: str,
    sampling: SamplingParams,
    completion_ids: Sequence[int],
    logprobs: Sequence[float | None],
    finish_reason: str,
    stop_token_id: int | None,
    prompt_ids: Sequence[int],
    echoed_prompt: Sequence[int] | None = None,
    **extra,
) -> Generation:
    """Validate raw engine output, then build the `Generation` (the one path every engine uses)."""
    validate_output(
        engine=engine,
        completion_ids=completion_ids,
        logprobs=logprobs,
        finish_reason=finish_reason,
        sampling=sampling,
        sent_prompt=prompt_ids,
        echoed_prompt=echoed_prompt,
    )
    if stop_token_id is not None and (not completion_ids or completion_ids[-1] != stop_token_id):
        raise InvalidOutputError(f"{engine}: stop token {stop_token_id} is not the last completion id")
    return Generation(
        completion_ids=list(completion_ids),
        logprobs=[float(x) for x in logprobs],  # type: ignore[arg-type]  # validate_output above rejected every None
        finish_reason=finish_reason,  # type: ignore[arg-type]  # validate_output above rejected all but stop/length/abort
        stop_token_id=stop_token_id,
        prompt_len=len(prompt_ids),
        engine=engine,
        model=model,
        **extra,
    )
