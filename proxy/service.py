"""`ProxyCore`: one chat or completions request -> plan the prompt ids, sample, parse, record (no HTTP here).

tool_choice (the engine cannot constrain decoding): "auto" and unset return what the model wrote; "none"
drops any tool calls from the returned message (the sampled ids keep them; a warning is recorded);
"required" and a named function are passed to the template as tools and checked after sampling: a reply
that does not comply is returned as sampled, with a warning on the call (`warnings` in the session JSON).
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
import zlib
from collections.abc import Callable
from typing import Any

from rollgym.engines.base import Engine, Generation
from rollgym.engines.errors import BadRequestError, ContextOverflowError, EngineError, EngineTimeoutError
from rollgym.proxy.error_responses import APIError, bad_request
from rollgym.proxy.matching import to_template_messages
from rollgym.proxy.params import check_chat, check_common, sampling_for
from rollgym.proxy.schemas import (
    ChatChoice,
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChoiceLogprobs,
    CompletionChoice,
    CompletionRequest,
    CompletionResponse,
    TokenLogprob,
    Usage,
)
from rollgym.proxy.session import COMPLETIONS_KEY, Call, Plan, ProxySession
from rollgym.proxy.store import ProxySettings, SessionStore
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import Turn
from rollgym.rollouts.turns import generate, record_turn
from rollgym.tokenization import ChatTokenizer, TokenizationError, TokenTrajectory

COMPLETIONS_REASON = "completions call: a raw prompt without the chat template (one segment per call)"


def _usage(call: Call) -> Usage:
    n = len(call.completion_ids)
    return Usage(
        prompt_tokens=call.prompt_len,
        completion_tokens=n,
        total_tokens=call.prompt_len + n,
        prompt_tokens_details={"cached_tokens": call.reused_len},
    )


class ProxyCore:
    """The proxy without HTTP: sessions, and the chat/completions logic every route calls."""

    def __init__(self, policy: Policy, settings: ProxySettings | None = None) -> None:
        self.policy = policy
        self.settings = settings or ProxySettings()
        tokenizer = policy.tokenizer
        assert tokenizer is not None  # RecordingProxy refuses a policy without one (a chat engine)
        self.tokenizer: ChatTokenizer = tokenizer
        if self.tokenizer.truncation != self.settings.truncation:  # the proxy's own policy for cut replies
            self.tokenizer = copy.copy(self.tokenizer)
            self.tokenizer.truncation = self.settings.truncation
        self.store = SessionStore(self.settings)
        self.model_name = self.settings.model_name or str(getattr(self.engine, "model", "") or "rollgym")
        #: the server's own URL (its configured host and bound port), for the base URLs of new sessions
        self.public_url = ""

    @property
    def engine(self) -> Engine:
        """The policy's engine now (a policy rebuilds it after being closed)."""
        return self.policy.engine

    def create_session(
        self, session_id: str | None = None, base_url: str = "", metadata: dict | None = None
    ) -> ProxySession:
        return self.store.create(
            self.tokenizer,
            session_id=session_id,
            base_url=base_url,
            metadata=metadata,
            engine_name=str(getattr(self.engine, "name", type(self.engine).__name__)),
            model=self.model_name,
            token_exact=bool(getattr(self.engine, "token_exact", True)),
        )

    # --- sampling -----------------------------------------------------------------------------
    def _sampling(self, sess: ProxySession, req: Any, prompt_len: int):
        """The request's sampling parameters; the proxy's temperature if it sets one; without a seed of its own, one
        derived from `settings.seed`."""
        sampling = sampling_for(
            req,
            self.tokenizer,
            prompt_len,
            getattr(self.engine, "max_model_len", None),
            self.settings.default_max_tokens,
        )
        if self.settings.temperature is not None:
            sampling = sampling.model_copy(update={"temperature": self.settings.temperature})
        if sampling.seed is None and self.settings.seed is not None:
            seed = zlib.crc32(f"{self.settings.seed}:{sess.id}:{len(sess.calls)}".encode())
            sampling = sampling.model_copy(update={"seed": seed})
        return sampling

    async def _generate(self, sess: ProxySession, prompt: list[int], sampling) -> tuple[Generation, float]:
        try:
            gen, generate_s = await generate(self.engine, prompt, sampling)
        except ContextOverflowError as exc:
            sess.record_error("engine", exc, 400)
            raise APIError(400, str(exc), param="messages", code="context_length_exceeded") from None
        except BadRequestError as exc:
            sess.record_error("engine", exc, 400)
            raise bad_request(f"the engine refused the request: {exc}") from None
        except EngineTimeoutError as exc:
            sess.record_error("engine", exc, 504)
            raise APIError(504, f"the engine timed out: {exc}", code="engine_timeout") from None
        except EngineError as exc:
            sess.record_error("engine", exc, 502)
            raise APIError(502, f"the engine failed: {type(exc).__name__}: {exc}", code="engine_error") from None
        except Exception as exc:  # noqa: BLE001 - any other engine failure is still a JSON 5xx, and recorded
            sess.record_error("engine", exc, 500)
            raise APIError(500, f"the engine failed: {type(exc).__name__}: {exc}", code="engine_error") from None
        if gen.finish_reason == "abort":
            err = RuntimeError("the engine aborted the generation")
            sess.record_error("engine", err, 503)
            raise APIError(503, str(err), code="engine_abort")
        return gen, generate_s

    # --- chat ---------------------------------------------------------------------------------
    async def chat(
        self, sess: ProxySession, req: ChatCompletionRequest, offload: bool = False, notes: list[str] | None = None
    ) -> tuple[ChatCompletionResponse, Call]:
        """Answer one chat request and record it; raise `APIError` for anything that is not a completion.
        `offload`: render and tokenize in a worker thread (a large request must not hold up other sessions);
        `notes`: warnings from translating another API's request (recorded on the call)."""
        check_chat(req)
        messages = to_template_messages(req.messages)
        if messages[-1]["role"] == "assistant":
            raise bad_request(
                "the last message is an assistant message; continuing a prefilled assistant turn is "
                "not supported (the model generates the next turn)",
                "messages",
            )
        tools = [t.model_dump(exclude_none=True) for t in req.tools] if req.tools else None
        try:
            kwargs = dict(req.chat_template_kwargs or {})
            plan = (
                await asyncio.to_thread(sess.plan, messages, tools, kwargs)
                if offload
                else sess.plan(messages, tools, kwargs)
            )
        except (TokenizationError, ValueError) as exc:
            raise bad_request(f"cannot tokenize this conversation: {exc}", "messages") from None
        prompt = plan.traj.next_prompt_ids
        sampling = self._sampling(sess, req, len(prompt))
        gen, generate_s = await self._generate(sess, prompt, sampling)
        warnings: list[str] = list(notes or [])

        def answer(message: dict) -> dict:  # the reply under tool_choice; the sampled ids keep what was written
            reply, reply_warnings = self._reply(message, req)
            warnings.extend(reply_warnings)
            return reply

        call = self._record(sess, plan, prompt, gen, generate_s, sampling.model_dump(), tools, answer, warnings)
        reply = call.reply
        finish = "tool_calls" if reply.get("tool_calls") and gen.finish_reason == "stop" else gen.finish_reason
        logprobs = ChoiceLogprobs(content=self._token_logprobs(gen)) if req.logprobs else None
        response = ChatCompletionResponse(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=req.model or self.model_name,
            usage=_usage(call),
            choices=[ChatChoice(message=reply, finish_reason=finish, logprobs=logprobs)],
        )
        return response, call

    def prompt_len(self, req: ChatCompletionRequest) -> int:
        """How many tokens `req`'s conversation renders to (a fresh render; nothing is recorded)."""
        check_chat(req)
        tools = [t.model_dump(exclude_none=True) for t in req.tools] if req.tools else None
        try:
            traj = self.tokenizer.start(to_template_messages(req.messages), tools, **(req.chat_template_kwargs or {}))
        except (TokenizationError, ValueError) as exc:
            raise bad_request(f"cannot tokenize this conversation: {exc}", "messages") from None
        return len(traj.next_prompt_ids)

    def _reply(self, message: dict[str, Any], req: ChatCompletionRequest) -> tuple[dict, list[str]]:
        """The assistant message to return (OpenAI shape: content None when only tool calls) and warnings."""
        warnings: list[str] = []
        calls = list(message.get("tool_calls") or [])
        choice = req.tool_choice
        if choice == "none" and calls:
            warnings.append(f"tool_choice='none': dropped {len(calls)} tool call(s) the model wrote")
            calls = []
        elif choice == "required" and not calls:
            warnings.append("tool_choice='required' but the model called no tool (decoding is not constrained)")
        elif choice is not None and not isinstance(choice, str):
            name = choice.function.get("name")
            if [c["function"]["name"] for c in calls] != [name]:
                warnings.append(f"tool_choice named {name!r} but the model did not call exactly it")
        content = message.get("content") or ""
        reply: dict[str, Any] = {"role": "assistant", "content": content if content or not calls else None}
        if message.get("reasoning_content") is not None:
            reply["reasoning_content"] = message["reasoning_content"]
        if calls:
            reply["tool_calls"] = calls
        return reply, warnings

    def _record(
        self,
        sess: ProxySession,
        plan: Plan,
        prompt: list[int],
        gen: Generation,
        generate_s: float,
        sampling: dict,
        tools: list[dict] | None,
        reply: Callable[[dict], dict],
        warnings: list[str],
        parse: bool = True,
    ) -> Call:
        """The call's turn, recorded as the rollout loop records one (`rollouts.turns`), into the session."""
        recorded: list[dict] = []
        try:
            record_turn(
                recorded,
                gen,
                generate_s,
                (len(sess.calls), len(prompt), None),
                plan.traj,
                self.tokenizer,
                tools,
                reply,
                parse,
            )
        except (TokenizationError, ValueError) as exc:
            sess.record_error("tokenization", exc, 502)
            raise APIError(
                502, f"the engine's output cannot be recorded: {exc}", code="invalid_engine_output"
            ) from None
        return sess.record(plan, Turn(**recorded[0]), warnings=warnings, sampling=sampling)

    def _token_logprobs(self, gen: Generation) -> list[TokenLogprob]:
        out = []
        for tok, lp in zip(gen.completion_ids, gen.logprobs, strict=True):
            text = self.tokenizer.decode([tok])
            out.append(TokenLogprob(token=text, logprob=lp, bytes=list(text.encode("utf-8"))))
        return out

    # --- completions ----------------------------------------------------------------------------
    async def complete(
        self, sess: ProxySession, req: CompletionRequest, offload: bool = False
    ) -> tuple[CompletionResponse, Call]:
        """Legacy completions: the prompt text is encoded as is (special-token strings become special ids);
        `offload`: encode in a worker thread."""
        check_common(req)
        if req.echo or req.suffix:
            raise bad_request("`echo` and `suffix` are not supported", "echo" if req.echo else "suffix")
        if isinstance(req.prompt, str):
            if not req.prompt:
                raise bad_request("`prompt` is empty", "prompt")
            prompt = (
                await asyncio.to_thread(self.tokenizer.encode, req.prompt)
                if offload
                else self.tokenizer.encode(req.prompt)
            )
        else:
            vocab = self.tokenizer.vocab_size
            if not req.prompt or any(not 0 <= t < vocab for t in req.prompt):
                raise bad_request(f"`prompt` token ids must be a non-empty list of ids in [0, {vocab})", "prompt")
            prompt = list(req.prompt)
        traj = TokenTrajectory(self.tokenizer, [], None, {}, prompt)
        plan = Plan(traj, [], [], COMPLETIONS_KEY, None, [], [], COMPLETIONS_REASON)
        sampling = self._sampling(sess, req, len(prompt))
        gen, generate_s = await self._generate(sess, prompt, sampling)
        body = gen.completion_ids[:-1] if gen.stop_token_id is not None else gen.completion_ids
        text = self.tokenizer.decode(body)
        call = self._record(
            sess,
            plan,
            prompt,
            gen,
            generate_s,
            sampling.model_dump(),
            None,
            lambda _unparsed: {"role": "assistant", "content": text},  # a raw prompt's completion is its text
            [],
            parse=False,
        )
        logprobs = None
        if req.logprobs is not None:
            toks = [t.token for t in self._token_logprobs(gen)]
            logprobs = {"tokens": toks, "token_logprobs": list(gen.logprobs), "top_logprobs": None, "text_offset": None}
        response = CompletionResponse(
            id=f"cmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=req.model or self.model_name,
            usage=_usage(call),
            choices=[CompletionChoice(text=text, finish_reason=gen.finish_reason, logprobs=logprobs)],
        )
        return response, call
