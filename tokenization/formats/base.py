"""`FormatTokenizer`: a `ChatTokenizer` whose reference is a library that renders chat messages to token ids.

GPT-OSS's reference is OpenAI's `openai-harmony`, Mistral's is `mistral-common`: both render a conversation to
ids directly (message text encoded on its own, special tokens inserted as ids), never through a Jinja template.
A `MessageCodec` wraps one such library; `FormatTokenizer` gives it the `ChatTokenizer` interface the loop, the
proxy and certification use, with bridges cut from the library's own ids.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from rollgym.tokenization.chat_tokenizer import ANCHOR, Bridge, ChatTokenizer, TruncationPolicy
from rollgym.tokenization.errors import BridgeError, InvalidInputError, UnsupportedFeatureError
from rollgym.tokenization.ids import IdSeq
from rollgym.tokenization.messages import make_tool_call
from rollgym.tokenization.parsers import ParsedToolCalls


class MessageCodec(Protocol):
    """A family's reference library: OpenAI-format messages to ids, and sampled ids back to a message."""

    name: str
    has_reasoning: bool
    vocab_size: int
    stop_ids: list[int]  # what ends a sampled assistant turn (Harmony: <|call|>, <|return|>)
    message_end_ids: set[int]  # what ends a message in rendered history (Harmony: <|end|>; Mistral: </s>)
    special_ids: set[int]
    special_vocab: dict[str, int]
    eos_id: int | None

    def render_ids(
        self, messages: list[dict], tools: list[dict] | None, add_generation_prompt: bool, **options: Any
    ) -> list[int]: ...

    def completion_ids(self, message: dict, tools: list[dict] | None, **options: Any) -> list[int]: ...

    def parse(self, ids: list[int], tools: list[dict] | None) -> tuple[str | None, ParsedToolCalls]: ...

    def encode_text(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class FormatTokenizer(ChatTokenizer):
    """A `ChatTokenizer` over a `MessageCodec`: prompts, bridges and parses come from the family's library.

    `hf` (optional) is a Hugging Face tokenizer of the same vocabulary, used only to encode raw text prompts
    (the proxy's completions API); without one, raw text is encoded as plain text.
    """

    def __init__(
        self,
        codec: MessageCodec,
        hf: Any = None,
        *,
        truncation: TruncationPolicy = "end",
        extra_stop_token_ids: list[int] | None = None,
    ):
        if truncation not in ("end", "close"):
            raise InvalidInputError(f"truncation must be 'end' or 'close', got {truncation!r}")
        self.codec, self.hf = codec, hf
        self.template = f"<{codec.name} reference>"
        self.truncation: TruncationPolicy = truncation
        self.tool_parser_name = codec.name
        self.parser = None
        self.reasoning_tags = ("", "")
        self.has_reasoning = codec.has_reasoning
        self.string_arguments = False
        self._added_ids = set(codec.special_ids)
        self._extra_stop = list(extra_stop_token_ids or [])
        self._bridge_tools: dict[str, bool] = {}
        self._verified_shapes: set[tuple] = set()
        self.vocab_size = codec.vocab_size
        self.recipes = False
        self.certification = None
        self._build_fast_paths()

    def _build_fast_paths(self) -> None:
        self._backend = self._segmented = self._renderer = self._recipes = self._prompt_recipes = None
        self._anchor = IdSeq(self.codec.encode_text(ANCHOR))

    # --- rendering: the library's ids -------------------------------------------------------------
    def render(self, messages, tools=None, add_generation_prompt: bool = False, **template_kwargs) -> str:
        """The library's rendering, as text (special tokens written out)."""
        return self.decode(self.codec.render_ids(messages, tools, add_generation_prompt, **template_kwargs))

    def rendering(self, messages, tools=None, add_generation_prompt: bool = False, **template_kwargs) -> IdSeq:
        return IdSeq(self.codec.render_ids(messages, tools, add_generation_prompt, **template_kwargs))

    def ids_of(self, rendering) -> list[int]:
        return list(rendering)

    @property
    def stop_pieces(self) -> list:
        return [IdSeq((t,)) for t in self.stop_token_ids]

    def _start_ids(self, messages, tools, template_kwargs: dict, options_key: str | None) -> list[int]:
        return self.codec.render_ids(messages, tools, True, **template_kwargs)

    def _render_prompt(self, messages, tools, template_kwargs: dict, options_key: str | None) -> str:
        return self.render(messages, tools, True, **template_kwargs)

    def canonical_completion(self, conv, i, tools=None, template_kwargs=None) -> IdSeq:
        """The ids the model emits for assistant message `i`, as the library writes that message."""
        return IdSeq(self.codec.completion_ids(conv[i], tools, **(template_kwargs or {})))

    # --- ids and text -----------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        if self.hf is not None:
            return self.hf.encode(text, add_special_tokens=False)
        return self.codec.encode_text(text)

    encode_whole = encode

    def decode(self, ids: list[int]) -> str:
        return self.codec.decode(list(ids))

    def token_text(self, token_id: int) -> str:
        return self.codec.decode([token_id])

    @property
    def special_vocab(self) -> dict[str, int]:
        return dict(self.codec.special_vocab)

    @property
    def pad_token_id(self) -> int | None:
        pad = getattr(self.hf, "pad_token_id", None)
        return pad if pad is not None else self.codec.eos_id

    # --- the turn structure -----------------------------------------------------------------------
    def _closing(self, new_messages, tools, template_kwargs, kwargs_key=None, system=None) -> tuple[IdSeq, IdSeq]:
        """The library's rendering of a dummy turn then `new_messages`, split right after that turn's content.

        The dummy is an answer whose content is the anchor; when the new messages are tool results and the
        library checks that results answer calls (Mistral v11+), it is a turn making those calls instead, and the
        split falls before its end token. `system` is the conversation's system message, which Mistral v3 moves
        into the newest user turn."""
        head = [system] if system else []
        results = [m for m in new_messages if m.get("role") == "tool"]
        if results and getattr(self.codec, "results_need_calls", False):
            calls = [make_tool_call(m.get("name") or "rollgym_probe_tool", {}, m.get("tool_call_id")) for m in results]
            turn = {"role": "assistant", "content": "", "tool_calls": calls}
            body = IdSeq(self.codec.completion_ids(turn, tools, **template_kwargs)[:-1])
        else:
            turn, body = {"role": "assistant", "content": ANCHOR}, self._anchor
        conv = [*head, {"role": "user", "content": "Hi."}, turn, *new_messages]
        full = IdSeq(self.codec.render_ids(conv, tools, True, **template_kwargs))
        at = full.find(body)
        if at < 0:
            raise BridgeError(f"{self.codec.name} did not render the dummy assistant turn as written; cannot bridge")
        cut = at + len(body)
        return full[:cut], full[cut:]

    def _first_special(self, closing, what: str) -> int:
        if not closing or closing[0] not in self._added_ids:
            raise UnsupportedFeatureError(
                f"{self.codec.name} does not end an assistant turn before {what} with a special token"
            )
        return closing[0]

    def _stop_cut(self, closing: IdSeq, last_id: int | None) -> int:
        """1 when the model ended its turn itself (a stop id) and the closing starts with the message end that
        turn already has (Harmony's `<|end|>` after a sampled `<|call|>` or `<|return|>`), else 0."""
        stopped = last_id is not None and last_id in self.stop_token_ids
        return int(stopped and bool(closing) and closing[0] in self.codec.message_end_ids)

    @functools.cached_property
    def stop_token_ids(self) -> list[int]:
        return list(dict.fromkeys([*self.codec.stop_ids, *self._extra_stop]))

    @functools.cached_property
    def tool_role_supported(self) -> bool:
        return True

    @functools.cached_property
    def supports_tools(self) -> bool:
        return True

    @functools.cached_property
    def contextual_bridges(self) -> bool:
        return False

    def bridge(
        self, new_messages, last_id, tools=None, template_kwargs=None, bridge_tools: Any = "auto", history=None
    ) -> Bridge:
        """Bridge ids after a completion ending in `last_id`: the library's rendering of `new_messages` after a
        fixed dummy turn, from right after that turn's content (its message end dropped when the model ended
        the turn itself)."""
        for msg in new_messages:
            if msg.get("role") == "assistant":
                raise InvalidInputError(
                    "add_messages() takes environment messages (tool/user/system), not assistant turns"
                )
        new_messages = _named_tool_results(new_messages, history or [])
        kwargs = template_kwargs or {}
        if bridge_tools == "auto":
            bridge_tools = self._tools_for_bridges(tools, kwargs)
        system = next((m for m in history or [] if m.get("role") in ("system", "developer")), None)
        closing = self._closing(new_messages, bridge_tools, kwargs, system=system)[1]
        cut = self._stop_cut(closing, last_id)
        return Bridge(ids=list(closing[cut:]), closed_turn=cut == 0)

    def _parse_body(self, ids, tools):
        return self.codec.parse(list(ids), tools)

    # --- pickling: the library handle is rebuilt in the receiving process ---------------------------
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for derived in ("_backend", "_segmented", "_renderer", "_recipes", "_prompt_recipes", "_anchor"):
            state.pop(derived, None)
        return state


def content_text(content: Any) -> str:
    """A message's content as text: a string as it is, text parts joined with newlines (as vLLM joins them)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def _named_tool_results(messages: list[dict], history: list[dict]) -> list[dict]:
    """Tool results with the `name` of the call they answer (Harmony addresses a result from `functions.NAME`),
    taken from the assistant turn in `history` that made the call when the result does not carry it."""
    if all(m.get("role") != "tool" or m.get("name") for m in messages):
        return messages
    names = {c.get("id"): (c.get("function") or {}).get("name") for m in history for c in m.get("tool_calls") or []}
    return [
        dict(m, name=names[m.get("tool_call_id")])
        if m.get("role") == "tool" and not m.get("name") and names.get(m.get("tool_call_id"))
        else m
        for m in messages
    ]
