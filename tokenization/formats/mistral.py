"""Mistral through `mistral-common`: OpenAI chat messages rendered by Mistral's own `encode_chat_completion`.

The formats differ by tokenizer version, and the version is the tokenizer file's: v3 writes `[TOOL_CALLS]` then a
JSON list with 9-character call ids and results as `{"content", "call_id"}`; v7 adds `[SYSTEM_PROMPT]` and
`[TOOL_RESULTS]id[TOOL_CONTENT]...`; v11 writes each call as `[TOOL_CALLS]name[CALL_ID]id[ARGS]{json}`; v13 drops
the call ids and adds `[THINK]...[/THINK]`. Up to v11 the `[AVAILABLE_TOOLS]` block (and before v7 the system
prompt) moves to the newest user message, so a user follow-up rewrites history; v13 only appends.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from rollgym.tokenization.errors import TemplateError, UnsupportedFeatureError
from rollgym.tokenization.formats.base import content_text
from rollgym.tokenization.parsers.base import ParsedToolCalls, json_arguments, snippet
from rollgym.tokenization.parsers.toolcall_json import json_call_list

_CALL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")


def mistral_call_id(call_id: str | None) -> str:
    """A call id Mistral accepts (9 letters and digits): the id itself when it is one, else a stable digest."""
    call_id = str(call_id or "")
    return call_id if _CALL_ID.match(call_id) else hashlib.sha1(call_id.encode()).hexdigest()[:9]


class MistralCodec:
    """Renders with `mistral-common` (`pip install mistral-common`) from a Tekken tokenizer file (`tekken.json`)."""

    name = "mistral"
    supports_parallel_calls = True
    results_need_calls = True  # v11+ refuse a tool result whose call id no assistant turn made

    def __init__(self, tokenizer_file: str | os.PathLike):
        self.tokenizer_file = str(tokenizer_file)
        tok = self._tokenizer.instruct_tokenizer.tokenizer
        self.version = str(getattr(tok.version, "value", tok.version))
        self.vocab_size = tok.n_words
        self.special_ids = set(tok.special_ids)
        self.special_vocab = {tok.id_to_piece(i): i for i in self.special_ids}
        self.eos_id = tok.eos_id
        self.stop_ids = [tok.eos_id]
        self.message_end_ids = {tok.eos_id}
        self._control = {
            name: self.special_vocab.get(name)
            for name in ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]")
        }
        self.has_reasoning = self._control["[THINK]"] is not None

    @property
    def _tokenizer(self):
        tok = self.__dict__.get("_tok")
        if tok is None:
            try:
                from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
            except ImportError:
                raise UnsupportedFeatureError(
                    "Mistral models need mistral-common: pip install mistral-common (or rollgym[mistral])"
                ) from None
            tok = self.__dict__["_tok"] = MistralTokenizer.from_file(self.tokenizer_file)
        return tok

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_tok"}

    # --- messages -> mistral-common ------------------------------------------------------------------
    def _assistant(self, message: dict):
        from mistral_common.protocol.instruct.chunk import TextChunk, ThinkChunk
        from mistral_common.protocol.instruct.messages import AssistantMessage
        from mistral_common.protocol.instruct.tool_calls import FunctionCall, ToolCall

        content: Any = content_text(message.get("content")) or None
        reasoning = message.get("reasoning_content")
        if reasoning and self.has_reasoning:
            content = [ThinkChunk(thinking=str(reasoning)), *([TextChunk(text=content)] if content else [])]
        calls = [
            ToolCall(
                id=mistral_call_id(c.get("id")),
                function=FunctionCall(
                    name=(c.get("function") or {}).get("name", ""),
                    arguments=_arguments_text((c.get("function") or {}).get("arguments")),
                ),
            )
            for c in message.get("tool_calls") or []
        ]
        if calls and content and self.version in ("v2", "v3", "v7"):
            raise TemplateError(
                f"Mistral tokenizer {self.version} cannot write text and tool calls in one assistant turn"
            )
        return AssistantMessage(content=content, tool_calls=calls or None)

    def _request(self, messages: list[dict], tools: list[dict] | None):
        from mistral_common.protocol.instruct.messages import SystemMessage, ToolMessage, UserMessage
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.protocol.instruct.tool_calls import Function, Tool

        out = []
        for message in messages:
            role = message.get("role")
            if role in ("system", "developer"):
                out.append(SystemMessage(content=content_text(message.get("content"))))
            elif role == "user":
                out.append(UserMessage(content=content_text(message.get("content"))))
            elif role == "assistant":
                out.append(self._assistant(message))
            elif role == "tool":
                out.append(
                    ToolMessage(
                        content=content_text(message.get("content")),
                        tool_call_id=mistral_call_id(message.get("tool_call_id")),
                        name=message.get("name"),
                    )
                )
            else:
                raise TemplateError(f"Mistral has no role {role!r}")
        specs = [
            Tool(
                function=Function(
                    name=f["name"], description=f.get("description") or "", parameters=f.get("parameters") or {}
                )
            )
            for f in ((t.get("function", t)) for t in tools or [])
        ]
        return ChatCompletionRequest(messages=out, tools=specs or None)

    # --- the codec -----------------------------------------------------------------------------------
    def render_ids(self, messages, tools, add_generation_prompt: bool, **options) -> list[int]:
        """The prompt `encode_chat_completion` writes; a conversation that ends with an assistant turn is that
        turn's prompt followed by the turn as the model writes it (mistral-common renders only prompts)."""
        if messages and messages[-1].get("role") == "assistant":
            return self.render_ids(messages[:-1], tools, True) + self.completion_ids(messages[-1], tools)
        try:
            return list(self._tokenizer.encode_chat_completion(self._request(messages, tools)).tokens)
        except (TemplateError, UnsupportedFeatureError):
            raise
        except Exception as exc:
            raise TemplateError(f"mistral-common refused the conversation: {exc}") from exc

    def completion_ids(self, message: dict, tools, **options) -> list[int]:
        """The assistant turn as the model writes it, through `</s>`."""
        from mistral_common.tokens.tokenizers.instruct import InstructTokenizerBase

        try:
            instruct = self._tokenizer.instruct_tokenizer
            if not isinstance(instruct, InstructTokenizerBase):  # every versioned one is; the abstract base has none
                raise TemplateError(f"{type(instruct).__name__} cannot encode an assistant turn")
            return list(instruct.encode_assistant_message(self._assistant(message), is_before_last_user_message=False))
        except TemplateError:
            raise
        except Exception as exc:
            raise TemplateError(f"mistral-common refused the assistant turn: {exc}") from exc

    def parse(self, ids: list[int], tools) -> tuple[str | None, ParsedToolCalls]:
        """Reasoning in `[THINK]`, content before `[TOOL_CALLS]`, calls in the version's format."""
        body = list(ids[:-1] if ids and ids[-1] == self.eos_id else ids)
        reasoning = None
        think, end = self._control["[THINK]"], self._control["[/THINK]"]
        if think is not None and think in body:
            start = body.index(think)
            stop = body.index(end, start) if end in body[start:] else len(body)
            reasoning = self.decode(body[start + 1 : stop])
            body = body[:start] + body[stop + 1 :]
        calls = self._control["[TOOL_CALLS]"]
        at = body.index(calls) if calls in body else len(body)
        result = ParsedToolCalls(content=self.decode(body[:at]).strip())
        if at < len(body):
            self._parse_calls(body[at:], result)
        return reasoning, result

    def _parse_calls(self, ids: list[int], result: ParsedToolCalls) -> None:
        marker, args, call_id = self._control["[TOOL_CALLS]"], self._control["[ARGS]"], self._control["[CALL_ID]"]
        pieces, current = [], []
        for token in ids[1:]:
            if token == marker:
                pieces.append(current)
                current = []
            else:
                current.append(token)
        pieces.append(current)
        index = 0
        for piece in pieces:
            if args is not None and args in piece:  # v11+: name [CALL_ID] id [ARGS] json
                head, raw = piece[: piece.index(args)], piece[piece.index(args) + 1 :]
                given = None
                if call_id is not None and call_id in head:
                    given = self.decode(head[head.index(call_id) + 1 :]).strip()
                    head = head[: head.index(call_id)]
                name = self.decode(head).strip()
                if not name:
                    result.fail(index, self.decode(piece), "expected a function name right after [TOOL_CALLS]")
                else:
                    arguments = json_arguments(self.decode(raw), index, name, result)
                    if arguments is not None:
                        result.add(name, arguments, given)
                index += 1
            else:  # v2-v7: a JSON list of {"name", "arguments", "id"}
                text = self.decode(piece)
                if not text.strip():
                    result.fail(index, text, f"[TOOL_CALLS] is followed by nothing: {snippet(text)}")
                    index += 1
                else:
                    index = json_call_list(text, index, result, "the [TOOL_CALLS] list")

    def encode_text(self, text: str) -> list[int]:
        return list(self._tokenizer.instruct_tokenizer.tokenizer.encode(text, bos=False, eos=False))

    def decode(self, ids: list[int]) -> str:
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

        return self._tokenizer.decode(list(ids), special_token_policy=SpecialTokenPolicy.KEEP)


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
