"""One proxy session: its calls, their exact token states, and segments (one `Rollout` each).

A request continues the longest earlier call whose prompt messages + returned reply are a prefix of it:
the new prompt is that call's exact ids plus bridge ids for the messages added since (never re-tokenized
sampled text). Otherwise a new segment starts from a fresh render, with the reason recorded.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from rollgym.proxy.matching import explain_mismatch, message_key, reply_difference
from rollgym.rollouts.records import (
    MAX_ERROR_MESSAGE,
    ErrorCategory,
    ErrorRecord,
    ProxyProvenance,
    Rollout,
    Turn,
    errored_rollout,
)
from rollgym.tokenization import ChatTokenizer, TokenizationError, TokenTrajectory
from rollgym.version import __version__

#: The `tools_key` of legacy completions calls (raw prompts): never matched by chat requests.
COMPLETIONS_KEY = "completions"

#: Responses-API responses a session remembers for `previous_response_id` (the newest ones)
MAX_REMEMBERED_RESPONSES = 64


@dataclass
class Call:
    """One recorded chat call: its `Turn` (what it sampled and meant, recorded as the rollout loop records a turn) and
    what only a proxy call has: the request it answered, how its prompt was built, its warnings, its token state."""

    index: int
    segment: int
    turn: Turn  # index, prompt_len, completion ids, logprobs, finish reason, message, parse errors, versions
    prompt_keys: list[tuple]
    tools_key: str
    request_messages: list[dict]
    new_messages: list[dict]  # messages added since the call it continues (all of them for a segment's first call)
    bridge_ids: list[int]
    reused_len: int  # prompt ids taken verbatim from the previous call
    warnings: list[str]
    sampling: dict
    traj: TokenTrajectory | None  # state after this call's completion; released for old calls
    created: float = field(default_factory=time.time)

    # the turn's fields, read through the call
    prompt_len = property(lambda self: self.turn.prompt_len)
    completion_ids = property(lambda self: self.turn.completion_ids)
    logprobs = property(lambda self: self.turn.logprobs)
    finish_reason = property(lambda self: self.turn.finish_reason)
    reply = property(lambda self: self.turn.message, doc="the assistant message returned (the turn's message)")
    parse_errors = property(lambda self: self.turn.parse_errors)
    generate_s = property(lambda self: self.turn.generate_s)

    def summary(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "segment": self.segment,
            "prompt_len": self.prompt_len,
            "reused_len": self.reused_len,
            "bridge_ids": self.bridge_ids,
            "completion_ids": self.completion_ids,
            "logprobs": self.logprobs,
            "finish_reason": self.finish_reason,
            "message": self.reply,
            "new_messages": self.new_messages,
            "parse_errors": self.parse_errors,
            "warnings": self.warnings,
            "generate_s": self.generate_s,
        }


@dataclass
class SegmentRecord:
    index: int
    reason: str
    prompt_ids: list[int]
    initial_messages: list[dict]
    tools: list[dict]
    calls: list[int] = field(default_factory=list)
    parent_call: int | None = None


@dataclass
class Plan:
    """What a request will be sampled from: a trajectory ready for a completion, and where it came from."""

    traj: TokenTrajectory
    messages: list[dict]
    keys: list[tuple]
    tools_key: str
    parent: Call | None
    new_messages: list[dict]
    bridge_ids: list[int]
    reason: str | None  # why a new segment starts (None: continues `parent`)
    reused_len: int = 0  # prompt ids taken verbatim from `parent`


class ProxySession:
    """A session's recorded calls and segments; `rollouts()` turns each segment into a `Rollout`."""

    def __init__(
        self,
        session_id: str,
        tokenizer: ChatTokenizer,
        *,
        base_url: str = "",
        api_key: str | None = None,
        engine_name: str = "",
        model: str = "",
        token_exact: bool = True,
        keep_states: int = 8,
        metadata: dict | None = None,
    ) -> None:
        self.id, self.tokenizer, self.base_url, self.api_key = session_id, tokenizer, base_url, api_key
        self.engine_name, self.model, self.token_exact = engine_name, model, token_exact
        self.keep_states = keep_states
        self.metadata = dict(metadata or {})
        self.calls: list[Call] = []
        self.segments: list[SegmentRecord] = []
        self.errors: list[dict[str, Any]] = []
        self.responses: OrderedDict[str, list[dict]] = OrderedDict()  # Responses API: id -> conversation, newest last
        self.created = self.last_used = time.monotonic()
        self.closed = False
        self._lock = threading.Lock()

    # --- planning ------------------------------------------------------------------------------
    def plan(self, messages: list[dict], tools: list[dict] | None, template_kwargs: dict) -> Plan:
        """Find the call this request continues and bridge the new messages, or start a new segment."""
        keys = [message_key(m) for m in messages]
        tools_key = json.dumps([tools or [], template_kwargs], sort_keys=True, default=str)
        with self._lock:
            calls = list(self.calls)
        best, best_traj, why_not = None, None, None
        for call in reversed(calls):
            n = len(call.prompt_keys)
            if best is not None and n <= len(best.prompt_keys):
                continue
            if n + 1 >= len(keys) or call.tools_key != tools_key or call.prompt_keys != keys[:n]:
                continue
            if reply_difference(call.reply, messages[n]) is not None:
                continue
            added = messages[n + 1 :]
            if any(m["role"] == "assistant" for m in added):
                why_not = why_not or (
                    f"the request adds an assistant message the proxy did not generate after call {call.index}"
                )
                continue
            call_traj = call.traj  # read once: `record` may release it meanwhile (keep_states)
            if call_traj is None:
                why_not = why_not or (
                    f"call {call.index} matches but its token state was released (keep_states={self.keep_states})"
                )
                continue
            if call_traj.ended:
                why_not = why_not or f"call {call.index} matches but its trajectory ended ({call_traj.end_reason})"
                continue
            best, best_traj = call, call_traj
        if best is not None and best_traj is not None:
            traj = best_traj.clone()
            reused = len(traj)
            added = messages[len(best.prompt_keys) + 1 :]
            try:
                bridge = traj.add_messages(added)
                return Plan(traj, messages, keys, tools_key, best, added, bridge, None, reused)
            except (TokenizationError, ValueError) as exc:  # cannot bridge: start afresh, and say why
                why_not = f"call {best.index} matches but its new messages cannot be bridged: {exc}"
        chat_calls = [c for c in calls if c.tools_key != COMPLETIONS_KEY]
        if not chat_calls:
            reason = "first call"
        elif why_not:
            reason = why_not
        elif chat_calls[-1].tools_key != tools_key:
            reason = "tools or chat_template_kwargs changed"
        else:
            last = chat_calls[-1]
            reason = explain_mismatch(last.prompt_keys, last.reply, messages, keys)
        traj = self.tokenizer.start(messages, tools, **template_kwargs)
        return Plan(traj, messages, keys, tools_key, None, list(messages), [], reason)

    # --- recording ------------------------------------------------------------------------------
    def record(self, plan: Plan, turn: Turn, *, warnings: list[str], sampling: dict) -> Call:
        """Append a sampled call to its segment (or open a new one: first call, rewrite, branch)."""
        with self._lock:
            index = len(self.calls)
            reason, parent = plan.reason, plan.parent
            if parent is not None:
                seg = self.segments[parent.segment]
                if seg.calls[-1] != parent.index:
                    taken_by = seg.calls[seg.calls.index(parent.index) + 1]
                    reason = f"branched: call {parent.index} was already continued by call {taken_by}"
            if reason is None:
                assert parent is not None  # a plan without a reason continues its parent call
                segment = self.segments[parent.segment]
            else:
                prompt_ids = plan.traj.next_prompt_ids[: turn.prompt_len]
                segment = SegmentRecord(
                    index=len(self.segments),
                    reason=reason,
                    prompt_ids=prompt_ids,
                    initial_messages=plan.messages,
                    tools=plan.traj.tools or [],
                    parent_call=parent.index if parent is not None else None,
                )
                self.segments.append(segment)
            call = Call(
                index=index,
                segment=segment.index,
                turn=turn,
                prompt_keys=plan.keys,
                tools_key=plan.tools_key,
                request_messages=plan.messages,
                new_messages=plan.new_messages,
                bridge_ids=plan.bridge_ids,
                reused_len=plan.reused_len,
                warnings=warnings,
                sampling=sampling,
                traj=plan.traj,
            )
            segment.calls.append(index)
            self.calls.append(call)
            for old in self.calls[: -self.keep_states]:
                old.traj = None
            self.last_used = time.monotonic()
            return call

    def remember_response(self, response_id: str, conversation: list[dict]) -> None:
        """Keep a Responses-API response's conversation (input + reply) for `previous_response_id` (bounded)."""
        with self._lock:
            self.responses[response_id] = conversation
            while len(self.responses) > MAX_REMEMBERED_RESPONSES:
                self.responses.popitem(last=False)

    def recall_response(self, response_id: str) -> list[dict] | None:
        with self._lock:
            return self.responses.get(response_id)

    def record_error(self, kind: str, exc: BaseException, status: int) -> None:
        with self._lock:
            self.errors.append(
                {
                    "call": len(self.calls),
                    "category": kind,
                    "type": type(exc).__name__,
                    "message": str(exc)[:MAX_ERROR_MESSAGE],
                    "status": status,
                    "time": time.time(),
                }
            )

    # --- views --------------------------------------------------------------------------------
    def rollouts(self) -> list[Rollout]:
        """One token-exact `Rollout` per segment, turns = its calls; env_messages/bridge_ids = what came next."""

        with self._lock:
            segments, calls, errors = list(self.segments), list(self.calls), list(self.errors)
        out = []
        for seg in segments:
            seg_calls = [calls[i] for i in seg.calls]
            turns = []
            for k, call in enumerate(seg_calls):
                nxt = seg_calls[k + 1] if k + 1 < len(seg_calls) else None
                turns.append(
                    call.turn.model_copy(
                        update={
                            "index": k,
                            "env_messages": nxt.new_messages if nxt else [],
                            "bridge_ids": nxt.bridge_ids if nxt else [],
                        }
                    )
                )
            last = seg_calls[-1] if seg_calls else None
            rollout = Rollout(
                task_id=str(self.metadata.get("task_id", "")),
                group_id=str(self.metadata.get("group_id", "")),
                prompt_ids=seg.prompt_ids,
                initial_messages=seg.initial_messages,
                tools=seg.tools,
                turns=turns,
                truncated=bool(last and last.finish_reason == "length"),
                stop_reason="truncated_completion" if last and last.finish_reason == "length" else None,
                sampling=seg_calls[0].sampling if seg_calls else {},
                engine=self.engine_name,
                model=self.model,
                token_exact=self.token_exact,
                rollgym_version=__version__,
                proxy=ProxyProvenance(
                    session=self.id,
                    segment=seg.index,
                    segment_reason=seg.reason,
                    parent_call=seg.parent_call,
                    calls=list(seg.calls),
                    session_errors=len(errors),
                    warnings=[w for c in seg_calls for w in c.warnings],
                ),
            )
            rollout.timings.generate_s = sum(c.generate_s for c in seg_calls)
            out.append(rollout)
        return out

    def error_rollout(self, category: ErrorCategory, exc: BaseException | str) -> Rollout:
        """A rollout standing for a session that produced nothing usable (e.g. the agent crashed first)."""
        text = exc if isinstance(exc, str) else f"{exc}"
        kind = "Error" if isinstance(exc, str) else type(exc).__name__
        return errored_rollout(
            ErrorRecord(category=category, type=kind, message=text),
            task_id=str(self.metadata.get("task_id", "")),
            engine=self.engine_name,
            model=self.model,
            token_exact=self.token_exact,
            proxy=ProxyProvenance(session=self.id),
        )

    def to_json(self) -> dict[str, Any]:
        """The management API's view: calls (ids, logprobs, messages), segments with reasons, errors."""
        with self._lock:
            return {
                "session_id": self.id,
                "base_url": self.base_url,
                "metadata": self.metadata,
                "closed": self.closed,
                "calls": [c.summary() for c in self.calls],
                "segments": [
                    {
                        "index": s.index,
                        "reason": s.reason,
                        "calls": s.calls,
                        "parent_call": s.parent_call,
                        "prompt_len": len(s.prompt_ids),
                    }
                    for s in self.segments
                ],
                "errors": list(self.errors),
            }


def new_session_id() -> str:
    return "sess-" + uuid.uuid4().hex[:16]
