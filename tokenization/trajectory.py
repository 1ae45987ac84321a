"""`TokenTrajectory`: the growing token sequence of one conversation, exactly as the engine saw it."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rollgym.tokenization.errors import InvalidInputError, TrajectoryStateError

if TYPE_CHECKING:
    from rollgym.tokenization.chat_tokenizer import ChatTokenizer


@dataclass(slots=True)
class Segment:
    """A run of `completion_ids`: sampled ids (mask 1) or environment bridge ids (mask 0). (A dataclass, not
    a pydantic model: two are made per turn and they never leave the trajectory.)"""

    kind: Literal["completion", "bridge"]
    start: int
    end: int
    finish_reason: str | None = None
    closed_turn: bool = False
    n_messages: int = 0


class TokenIds(list):
    """Token ids from a `TokenTrajectory`: every one a plain int in its tokenizer's vocabulary, so engines
    need not check them again on every turn. (The trajectory checks the ids it is given, the prompt and
    each completion, and trusts its own tokenizer's; a `TokenIds` someone else changes loses the promise.)"""

    __slots__ = ()


def _vocabulary_ids(ids, vocab: int, what: str) -> list[int]:
    """`ids` as plain ints, each in [0, vocab), or `ValueError` naming the first that is not."""
    try:
        ids = list(map(operator.index, ids))
    except TypeError as exc:
        raise InvalidInputError(f"{what} must be integers ({exc})") from None
    if ids and (min(ids) < 0 or max(ids) >= vocab):
        i, tok = next((i, t) for i, t in enumerate(ids) if not 0 <= t < vocab)
        raise InvalidInputError(f"{what}: id {tok} at position {i} is outside the vocabulary (size {vocab})")
    return ids


class TokenTrajectory:
    """Prompt ids, then alternating sampled completions and bridges; never re-tokenized.

    `completion_ids` is everything after the initial prompt; `env_mask` is 1 on sampled ids and 0
    on bridge ids; `logprobs` holds the engine's sampling logprobs (0.0 on bridge ids).
    """

    def __init__(
        self,
        tokenizer: ChatTokenizer,
        messages: list[dict],
        tools: list[dict] | None,
        template_kwargs: dict[str, Any],
        prompt_ids: list[int],
        options_key: str | None = None,
    ):
        self.tokenizer = tokenizer
        self.tools = tools
        self.template_kwargs = template_kwargs
        self.initial_messages = list(messages)
        self.messages: list[dict] = list(messages)
        self.prompt_ids: list[int] = _vocabulary_ids(prompt_ids, tokenizer.vocab_size, "prompt ids")
        self.completion_ids: list[int] = []
        self.logprobs: list[float] = []
        self.env_mask: list[int] = []
        self.segments: list[Segment] = []
        self.ended = False
        self.end_reason: str | None = None
        self._bridge_tools = tokenizer._tools_for_bridges(tools, template_kwargs, options_key)  # once per trajectory

    # --- state ----------------------------------------------------------------------------
    @property
    def next_prompt_ids(self) -> TokenIds:
        """What the engine must see next: the prompt plus everything appended since (a fresh list)."""
        ids = TokenIds(self.prompt_ids)
        ids += self.completion_ids
        return ids

    def __len__(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)

    @property
    def awaiting(self) -> Literal["completion", "messages", "nothing"]:
        if self.ended:
            return "nothing"
        if self.segments and self.segments[-1].kind == "completion":
            return "messages"
        return "completion"

    def end(self, reason: str) -> None:
        """Mark the trajectory finished; later appends raise."""
        self.ended, self.end_reason = True, reason

    def clone(self) -> TokenTrajectory:
        """An independent copy: every attribute kept, the lists that grow copied (a proxy session continues one
        recorded state many times)."""
        new = TokenTrajectory.__new__(TokenTrajectory)
        new.__dict__.update(self.__dict__)
        new.initial_messages, new.messages = list(self.initial_messages), list(self.messages)
        new.prompt_ids, new.completion_ids = list(self.prompt_ids), list(self.completion_ids)
        new.logprobs, new.env_mask, new.segments = list(self.logprobs), list(self.env_mask), list(self.segments)
        return new

    # --- appending --------------------------------------------------------------------------
    def add_completion(
        self,
        ids: list[int],
        logprobs: list[float] | None = None,
        finish_reason: str = "stop",
        message: dict | None = None,
    ) -> None:
        """Append sampled ids verbatim (mask 1) with their sampling logprobs.

        `finish_reason == "length"` ends the trajectory under the "end" truncation policy; under
        "close" the next `add_messages` closes the turn with the template's end token (masked).
        `"abort"` always ends it.
        """
        if self.ended:
            raise TrajectoryStateError(f"the trajectory has ended ({self.end_reason}); no more completions")
        if self.awaiting != "completion":
            raise TrajectoryStateError(
                "add_completion() twice in a row: add the environment's reply with add_messages() first"
            )
        ids = _vocabulary_ids(ids, self.tokenizer.vocab_size, "completion ids")
        logprobs = [0.0] * len(ids) if logprobs is None else [float(x) for x in logprobs]
        if len(logprobs) != len(ids):
            raise InvalidInputError(f"{len(ids)} ids but {len(logprobs)} logprobs")
        if logprobs and not math.isfinite(sum(logprobs)):  # one C-speed pass; find the culprit only on failure
            bad = next(((i, x) for i, x in enumerate(logprobs) if not math.isfinite(x)), None)
            if bad is not None:
                raise InvalidInputError(f"logprob {bad[1]} at position {bad[0]} is not finite")
        start = len(self.completion_ids)
        self.completion_ids.extend(ids)
        self.logprobs.extend(logprobs)
        self.env_mask.extend([1] * len(ids))
        self.segments.append(
            Segment(kind="completion", start=start, end=len(self.completion_ids), finish_reason=finish_reason)
        )
        if message is not None:
            self.messages.append(message)
        if finish_reason == "abort":
            self.end("aborted")
        elif finish_reason == "length" and self.tokenizer.truncation == "end":
            self.end("truncated")

    def add_messages(self, messages: list[dict]) -> list[int]:
        """Append environment messages (tool/user/system) as bridge ids (mask 0, logprob 0.0); return them.

        Calling it again before the next completion merges the messages into one bridge (tool results
        of one turn must be rendered together, e.g. Qwen groups them in one user turn).
        """
        if self.ended:
            raise TrajectoryStateError(f"the trajectory has ended ({self.end_reason}); no more messages")
        if not messages:
            raise InvalidInputError("add_messages() needs at least one message")
        messages = list(messages)
        if not self.segments:  # nothing sampled yet: the prompt itself can be re-rendered
            self.initial_messages += messages
            self.messages += messages
            self.prompt_ids = self.tokenizer.prompt_ids(self.initial_messages, self.tools, **self.template_kwargs)
            return []
        if self.segments[-1].kind == "bridge":  # merge with the previous, unsampled bridge
            prev = self.segments.pop()
            del self.completion_ids[prev.start :], self.logprobs[prev.start :], self.env_mask[prev.start :]
            messages = self.messages[len(self.messages) - prev.n_messages :] + messages
            del self.messages[len(self.messages) - prev.n_messages :]
        last = self.segments[-1]
        last_id = self.completion_ids[last.end - 1] if last.end > last.start else None
        bridge = self.tokenizer.bridge(
            messages, last_id, self.tools, self.template_kwargs, self._bridge_tools, history=self.messages
        )
        start = len(self.completion_ids)
        self.completion_ids.extend(bridge.ids)
        self.logprobs.extend([0.0] * len(bridge.ids))
        self.env_mask.extend([0] * len(bridge.ids))
        self.segments.append(
            Segment(
                kind="bridge",
                start=start,
                end=len(self.completion_ids),
                closed_turn=bridge.closed_turn,
                n_messages=len(messages),
            )
        )
        self.messages += messages
        return bridge.ids

    # --- views ------------------------------------------------------------------------------
    def to_rollout_dict(self, drop_trailing_bridge: bool = False) -> dict[str, list]:
        """The keys TRL's `rollout_func` returns: prompt_ids, completion_ids, logprobs, env_mask.

        `drop_trailing_bridge` removes environment ids after the last sampled turn (a reply the
        model never answered), so the sequence ends on the model's own end-of-turn token.
        """
        end = len(self.completion_ids)
        if drop_trailing_bridge and self.segments and self.segments[-1].kind == "bridge":
            end = self.segments[-1].start
        return {
            "prompt_ids": list(self.prompt_ids),
            "completion_ids": self.completion_ids[:end],
            "logprobs": self.logprobs[:end],
            "env_mask": self.env_mask[:end],
        }
