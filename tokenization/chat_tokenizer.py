"""`ChatTokenizer`: a Hugging Face tokenizer plus a chat template, turned into token-exact trajectories.

The prompt is rendered once; sampled ids are appended verbatim; environment messages are added as
bridge tokens: the new messages rendered after a fixed dummy context, keeping only the text after
the dummy assistant turn. The bridge never re-tokenizes sampled text, so BPE merges across turns,
history-rewriting templates and separators after the stop token cannot change trained ids.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from rollgym.tokenization.errors import (
    BridgeError,
    InvalidInputError,
    TemplateError,
    UnsupportedFeatureError,
)
from rollgym.tokenization.messages import make_tool_call, normalize_for_template
from rollgym.tokenization.parsers import (
    ParsedToolCalls,
    ToolCallParseError,
    detect_parser,
    make_parser,
    split_reasoning,
)
from rollgym.tokenization.recipes import PROBES, RenderRecipes, deterministic, template_probes
from rollgym.tokenization.rendering import TemplateRenderer
from rollgym.tokenization.segmented import SegmentedEncoder, encode_text

TruncationPolicy = Literal["end", "close"]

#: Content of the dummy assistant turn: the bridge starts right after it.
ANCHOR = "ROLLGYMANCHOR"
_DUMMY = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": ANCHOR}]
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "rollgym_probe_tool",
        "description": "Probe.",
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
    },
}


class ParsedCompletion(BaseModel):
    """A completion turned into an OpenAI assistant message, plus any malformed tool calls."""

    message: dict[str, Any]
    errors: list[ToolCallParseError] = Field(default_factory=list)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.message.get("tool_calls") or []

    def error_message(self) -> str | None:
        """Text to show the model about its malformed tool calls, or None when all parsed."""
        if not self.errors:
            return None
        lines = [f"tool call #{e.index + 1} could not be parsed: {e.message}" for e in self.errors]
        return "Error: " + "\n".join(lines) + "\nFix the format and call the tool again."


@dataclass(slots=True)
class Bridge:
    """Bridge ids for a batch of environment messages, and whether they close the turn themselves."""

    ids: list[int]
    closed_turn: bool


def _load_template(chat_template: str | os.PathLike | None) -> str | None:
    if chat_template is None:
        return None
    text = str(chat_template)
    if "{{" in text or "{%" in text:
        return text
    path = Path(chat_template)
    if path.is_file():
        return path.read_text()
    raise InvalidInputError(f"chat_template is neither a Jinja template string nor an existing file: {text[:80]!r}")


def _options_key(tools: list[dict] | None, template_kwargs: dict) -> str:
    """Tools and template options as a hashable key ("" when there are neither; keys in their order)."""
    return json.dumps([tools, template_kwargs], default=str) if tools or template_kwargs else ""


class ChatTokenizer:
    """A tokenizer and chat template that build `TokenTrajectory`s without re-tokenizing sampled ids."""

    def __init__(
        self,
        tokenizer,
        chat_template: str | os.PathLike | None = None,
        *,
        tool_parser: str | None = None,
        truncation: TruncationPolicy = "end",
        extra_stop_token_ids: list[int] | None = None,
        recipes: bool = True,
    ):
        self.hf = tokenizer
        template = _load_template(chat_template) or getattr(tokenizer, "chat_template", None)
        if isinstance(template, dict):
            template = template.get("default")
        if not template:
            raise InvalidInputError(
                "the tokenizer has no chat template; pass chat_template= (a file or a template string)"
            )
        self.template: str = template
        if truncation not in ("end", "close"):
            raise InvalidInputError(f"truncation must be 'end' or 'close', got {truncation!r}")
        self.truncation: TruncationPolicy = truncation
        self.tool_parser_name = tool_parser or detect_parser(self.template)
        self.parser = make_parser(self.tool_parser_name) if self.tool_parser_name else None
        self.reasoning_tags: tuple[str, str] = getattr(self.parser, "reasoning_tags", ("<think>", "</think>"))
        self.has_reasoning = any(tag in self.template for tag in self.reasoning_tags)
        self._added_ids = set(tokenizer.get_added_vocab().values())
        self._extra_stop = list(extra_stop_token_ids or [])
        self._bridge_tools: dict[str, bool] = {}
        self._verified_shapes: set[tuple] = set()
        self.vocab_size = len(tokenizer)  # base vocabulary plus added tokens: every id an engine may return
        self.recipes = recipes  # compiled per-shape renders (see `recipes`); False renders every time
        self.certification = None
        self._build_fast_paths()

    def _build_fast_paths(self) -> None:
        """The Rust tokenizer, the piece-wise encoder, the compiled template and the bridge recipes
        (rebuilt after unpickling)."""
        self._backend = self.hf.backend_tokenizer if getattr(self.hf, "is_fast", False) else None
        self._segmented = SegmentedEncoder.for_backend(self._backend) if self._backend is not None else None
        self._renderer = renderer = TemplateRenderer.for_tokenizer(self.hf, self.template)
        self.string_arguments = self._takes_string_arguments()
        use = renderer is not None and self.__dict__.get("recipes", True) and deterministic(self.template)
        probes = (
            PROBES + template_probes(renderer.environment, self.template, renderer.special_token_values)
            if use and renderer is not None
            else []
        )
        self._recipes = RenderRecipes(self._render_closing_plain, probes) if use else None  # bridges
        self._prompt_recipes = RenderRecipes(self._render_prompt_plain, probes) if use else None  # initial prompts

    # --- pickling (worker processes): the compiled template and piece cache are rebuilt, not shipped ---------
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for derived in ("_backend", "_segmented", "_renderer", "_recipes", "_prompt_recipes"):
            state.pop(derived, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._build_fast_paths()

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, chat_template: str | os.PathLike | None = None, **kwargs
    ) -> ChatTokenizer:
        """Load a tokenizer directory (or hub id, when a hub is reachable) with its own or a given template.

        The route is the one `Policy`, the CLI and the proxy take (`rollgym.tokenization.loading.load_tokenizer`): a
        GPT-OSS (Harmony) or Mistral (`tekken.json`) directory without a given `chat_template` returns the
        library-backed `FormatTokenizer` (openai-harmony, mistral-common), which has this same interface; any other
        directory a `ChatTokenizer` over its Jinja template."""
        from rollgym.tokenization.loading import load_tokenizer

        return load_tokenizer(path, chat_template, **kwargs)

    # --- rendering -------------------------------------------------------------------------
    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None = None,
        add_generation_prompt: bool = False,
        **template_kwargs,
    ) -> str:
        """Render messages to text with the chat template (messages normalised as templates expect)."""
        try:
            if self._renderer is not None and all(type(t) is dict for t in tools or ()):
                return self._renderer.render(
                    normalize_for_template(messages, self.string_arguments),
                    tools or None,
                    add_generation_prompt,
                    **template_kwargs,
                )
            return self.hf.apply_chat_template(
                normalize_for_template(messages, self.string_arguments),
                tools=tools or None,
                chat_template=self.template,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                **template_kwargs,
            )
        except Exception as exc:  # jinja raises its own types, templates raise via raise_exception
            raise TemplateError(f"the chat template refused the conversation: {exc}") from exc

    def encode(self, text: str) -> list[int]:
        """Token ids of rendered text (special-token strings become special tokens, no BOS added)."""
        if self._segmented is not None:  # piece-wise between special tokens, repeated pieces from a cache
            return self._segmented.encode(text)
        return self.encode_whole(text)

    def decode(self, ids: list[int]) -> str:
        """Exact text of ids, special tokens included, no clean-up of spaces."""
        if self._backend is not None:
            return self._backend.decode(ids, skip_special_tokens=False)
        return self.hf.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def encode_whole(self, text: str) -> list[int]:
        """`encode` without the piece cache: the tokenizer on the whole text (the reference checks compare to)."""
        if self._backend is not None:
            return encode_text(self._backend, text)
        return self.hf.encode(text, add_special_tokens=False)

    @property
    def special_vocab(self) -> dict[str, int]:
        """The vocabulary's special (added) tokens: text -> id."""
        return self.hf.get_added_vocab()

    @property
    def pad_token_id(self) -> int | None:
        """The vocabulary's pad id (None when it has none)."""
        return self.hf.pad_token_id

    def token_text(self, token_id: int) -> str:
        return self.hf.convert_ids_to_tokens(token_id)

    # --- the template's turn structure -------------------------------------------------------
    def _closing(
        self, new_messages: list[dict], tools, template_kwargs, kwargs_key: str | None = None
    ) -> tuple[str, str]:
        """Render dummy context + new messages; split right after the dummy assistant's content.

        Without tools in the bridge, the shape's compiled recipe answers when it has one (see
        `recipes`); otherwise the template is rendered in full.
        """
        if tools is None and self._recipes is not None:
            if kwargs_key is None:
                kwargs_key = _options_key(None, template_kwargs)
            found = self._recipes.render(
                normalize_for_template(new_messages, self.string_arguments), template_kwargs, kwargs_key
            )
            if found is not None:
                return found
        return self._split_at_anchor(self.render(_DUMMY + list(new_messages), tools, True, **template_kwargs))

    def _render_closing_plain(self, new_messages: list[dict], template_kwargs: dict, tools=None) -> tuple[str, str]:
        """`_closing` by a full render of messages whose values reach the template untouched (for recipes)."""
        renderer = self._renderer
        assert renderer is not None  # recipes are built only when there is a renderer
        return self._split_at_anchor(renderer.render_plain(_DUMMY + new_messages, tools, True, template_kwargs))

    def _render_prompt_plain(self, messages: list[dict], template_kwargs: dict, tools=None) -> tuple[str, str]:
        renderer = self._renderer
        assert renderer is not None  # recipes are built only when there is a renderer
        return "", renderer.render_plain(messages, tools, True, template_kwargs)

    def render_prompt(self, messages: list[dict], tools: list[dict] | None = None, **template_kwargs) -> str:
        """`render(messages, tools, add_generation_prompt=True)`, from the shape's recipe when it has one."""
        return self._render_prompt(messages, tools, template_kwargs, None)

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None = None, **template_kwargs) -> list[int]:
        """The ids of the prompt for the next assistant turn after `messages` (what the engine is given)."""
        return self._start_ids(messages, tools, template_kwargs, None)

    def _start_ids(self, messages: list[dict], tools, template_kwargs: dict, options_key: str | None) -> list[int]:
        return self.encode(self._render_prompt(messages, tools, template_kwargs, options_key))

    def rendering(self, messages: list[dict], tools=None, add_generation_prompt: bool = False, **template_kwargs):
        """What the reference renders, in its own unit: text for a Jinja template (ids for a library reference).

        Certification slices and prefix-compares renderings; `ids_of` turns one into ids."""
        return self.render(messages, tools, add_generation_prompt, **template_kwargs)

    def ids_of(self, rendering) -> list[int]:
        """The ids of a `rendering` (or a piece of one)."""
        return self.encode(rendering)

    @property
    def stop_pieces(self) -> list:
        """The stop tokens as pieces of a `rendering` (their text here)."""
        return [self.token_text(t) for t in self.stop_token_ids]

    def canonical_completion(self, conv: list[dict], i: int, tools=None, template_kwargs: dict | None = None):
        """The rendering the model emits for assistant message `i` when it reproduces the template exactly
        (through its stop token), or None when the template renders that turn unlike its own generation prompt."""
        from rollgym.tokenization.canonical import canonical_turn

        return canonical_turn(self, conv, i, tools, template_kwargs or {})

    def _render_prompt(self, messages: list[dict], tools, template_kwargs: dict, options_key: str | None) -> str:
        if self._prompt_recipes is not None and all(type(t) is dict for t in tools or ()):
            key = _options_key(tools, template_kwargs) if options_key is None else options_key
            found = self._prompt_recipes.render(
                normalize_for_template(messages, self.string_arguments), template_kwargs, key, tools or None
            )
            if found is not None:
                return found[1]
        return self.render(messages, tools, True, **template_kwargs)

    @staticmethod
    def _split_at_anchor(full: str) -> tuple[str, str]:
        at = full.find(ANCHOR)
        if at < 0:
            raise BridgeError("the chat template dropped the assistant content of the dummy context; cannot bridge")
        cut = at + len(ANCHOR)
        return full[:cut], full[cut:]

    def _first_special(self, closing: str, what: str) -> int:
        """The special token that ends an assistant turn before `what`: the first of the closing's leading
        special tokens (after any whitespace the model writes before it, Nemotron's `\n<SPECIAL_12>`), or EOS when
        it is among them (Cohere closes a response with `<|END_RESPONSE|>` and the turn with EOS)."""
        ids = self.encode(closing.lstrip())
        leading = []
        for token in ids:
            if token not in self._added_ids:
                break
            leading.append(token)
        if not leading:
            raise UnsupportedFeatureError(
                f"the template ends an assistant turn followed by {what} with {closing[:40]!r}, which does not start "
                "with a single special token of this vocabulary, so an engine cannot stop on it. "
                "Use the template the model was trained with, or add its special tokens to the tokenizer."
            )
        eos = getattr(self.hf, "eos_token_id", None)
        return eos if isinstance(eos, int) and eos in leading[1:] else leading[0]

    def _stop_cut(self, closing: str, last_id: int | None) -> int:
        """Where the bridge starts in `closing` after a completion that ended with `last_id`: right after that
        stop token when the closing has it behind only whitespace and special tokens (the model wrote those
        itself or they belong to the template's other turn shape), else 0 (the closing ends the turn)."""
        if last_id is None or last_id not in self.stop_token_ids:
            return 0
        stop_text = self.token_text(last_id)
        at = closing.find(stop_text)
        if at < 0 or at > 256:
            return 0
        before = closing[:at]
        if before.strip() and any(t not in self._added_ids for t in self.encode(before.strip())):
            return 0
        return at + len(stop_text)

    @functools.cached_property
    def end_of_turn_id(self) -> int:
        """The id that closes an assistant turn followed by a user message (used for synthetic closes)."""
        return self._first_special(self._closing([{"role": "user", "content": "x"}], None, {})[1], "a user message")

    @functools.cached_property
    def tool_role_supported(self) -> bool:
        try:
            self._closing([{"role": "tool", "tool_call_id": "call_0", "name": "f", "content": "x"}], None, {})
            return True
        except TemplateError:
            return False

    @functools.cached_property
    def supports_tools(self) -> bool:
        """Whether the template renders tool schemas and has a tool-call format and a tool role."""
        if self.parser is None or not self.tool_role_supported:
            return False
        try:
            rendered = self.render([{"role": "user", "content": "x"}], [_PROBE_TOOL], True)
        except TemplateError:
            return False
        return "rollgym_probe_tool" in rendered

    @functools.cached_property
    def stop_token_ids(self) -> list[int]:
        """Ids that end an assistant turn: the template's end-of-turn token(s), EOS, and any extra ids."""
        ids = [self.end_of_turn_id]
        if self.tool_role_supported:
            closing = self._closing(
                [{"role": "tool", "tool_call_id": "call_0", "name": "f", "content": "x"}], None, {}
            )[1]
            ids.append(self._first_special(closing, "a tool message"))
        eos = getattr(self.hf, "eos_token_id", None)
        ids.extend(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        ids.extend(self._extra_stop)
        return list(dict.fromkeys(ids))

    # --- trajectories ------------------------------------------------------------------------
    def check_tools(self, tools: list[dict] | None) -> None:
        if tools and not self.supports_tools:
            raise UnsupportedFeatureError(
                "this chat template has no tool calling (it renders no tool schemas, has no tool role, or no known "
                "tool-call format); drop tools= or use a template with tool support"
            )

    def start(self, messages: list[dict], tools: list[dict] | None = None, **template_kwargs):
        """Render the initial prompt once and return a new `TokenTrajectory`."""
        from rollgym.tokenization.trajectory import TokenTrajectory

        if not messages:
            raise InvalidInputError("start() needs at least one message")
        if messages[-1].get("role") == "assistant":
            raise InvalidInputError(
                "the initial messages end with an assistant message; the model must generate the next turn"
            )
        self.check_tools(tools)
        key = _options_key(tools, template_kwargs)  # serialised once, for the prompt recipe and the bridge decision
        ids = self._start_ids(messages, tools, template_kwargs, key)
        return TokenTrajectory(self, list(messages), tools, dict(template_kwargs), ids, options_key=key)

    def bridge(
        self,
        new_messages: list[dict],
        last_id: int | None,
        tools=None,
        template_kwargs=None,
        bridge_tools: Any = "auto",
        history: list[dict] | None = None,
    ) -> Bridge:
        """Bridge ids that follow a completion ending in `last_id` and introduce `new_messages`.

        When the completion ended with the stop token the template puts there, the bridge starts
        after it (so `<|im_end|>`'s trailing newline and GLM's `<|observation|>` are handled); otherwise
        the bridge includes the template's own closing, which ends the turn as masked tokens.
        """
        for msg in new_messages:
            if msg.get("role") == "tool" and not self.tool_role_supported:
                raise UnsupportedFeatureError("this chat template has no tool role; tool results cannot be added")
            if msg.get("role") == "assistant":
                raise InvalidInputError(
                    "add_messages() takes environment messages (tool/user/system), not assistant turns"
                )
        kwargs = template_kwargs or {}
        if history is not None and self.contextual_bridges:
            from rollgym.tokenization.contextual import history_bridge

            return history_bridge(self, history, new_messages, last_id, tools, kwargs)
        if bridge_tools == "auto":
            bridge_tools = self._tools_for_bridges(tools, kwargs)
        kwargs_key = _options_key(None, kwargs)
        head, closing = self._closing(new_messages, bridge_tools, kwargs, kwargs_key)
        cut = self._stop_cut(closing, last_id)
        ids = self.encode(closing[cut:])
        # Prefix assertion: the dummy render tokenizes as (context ids + bridge ids). Checked in full for
        # the first bridge of each shape (roles, stop token, tools, template options); afterwards the
        # boundary sits next to a special token, where tokenizers always split, so it cannot move.
        shape = (tuple(m.get("role") for m in new_messages), last_id if cut else None, bool(tools), kwargs_key)
        if shape not in self._verified_shapes or not ids or (cut == 0 and ids[0] not in self._added_ids):
            if self.encode_whole(head + closing) != self.encode(head + closing[:cut]) + ids:
                raise BridgeError(
                    f"bridge tokens do not split cleanly from the context (boundary at {closing[: cut + 20]!r}); "
                    "this (tokenizer, template) pair cannot be bridged safely"
                )
            self._verified_shapes.add(shape)
        return Bridge(ids=ids, closed_turn=cut == 0)

    @functools.cached_property
    def contextual_bridges(self) -> bool:
        """Whether environment messages render differently after their real history than after the dummy context
        (Cohere numbers each tool result by its call's position): such bridges are rendered after the history."""
        from rollgym.tokenization.contextual import renders_by_history

        return renders_by_history(self)

    def _tools_for_bridges(self, tools, template_kwargs, options_key: str | None = None) -> list[dict] | None:
        """`tools`, or None when they do not change how environment messages render (bridges stay small).

        Most templates render tool schemas only in the system turn; rendering the dummy context
        without them keeps a bridge's cost independent of the number and size of tools.
        """
        if not tools:
            return None
        key = _options_key(tools, template_kwargs) if options_key is None else options_key
        if key not in self._bridge_tools:
            probe = (
                [{"role": "tool", "tool_call_id": "call_0", "name": "f", "content": "x"}]
                if self.tool_role_supported
                else []
            )
            probe.append({"role": "user", "content": "y"})
            same = self._closing(probe, tools, template_kwargs)[1] == self._closing(probe, None, template_kwargs)[1]
            self._bridge_tools[key] = not same
        return tools if self._bridge_tools[key] else None

    def parse_completion(self, ids: list[int], tools: list[dict] | None = None) -> ParsedCompletion:
        """Turn sampled ids into an assistant message: content, reasoning_content, OpenAI tool_calls.

        Malformed tool calls never raise: they are listed in `errors` for the loop to show the model.
        """
        reasoning, parsed = self._parse_body(ids, tools)
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if parsed.calls:
            given = parsed.call_ids + [None] * (len(parsed.calls) - len(parsed.call_ids))
            message["tool_calls"] = [
                make_tool_call(name, args, call_id) for (name, args), call_id in zip(parsed.calls, given, strict=True)
            ]
            plan = getattr(self.parser, "plan_field", None)  # Cohere's template shows the plan of a tool-call turn
            if plan and reasoning is not None:
                message[plan] = reasoning
        message.update(parsed.extra)
        return ParsedCompletion(message=message, errors=parsed.errors)

    def _parse_body(self, ids: list[int], tools: list[dict] | None) -> tuple[str | None, ParsedToolCalls]:
        """The reasoning and the parsed visible part of a completion (its stop token dropped)."""
        body = ids[:-1] if ids and ids[-1] in self.stop_token_ids else ids
        text = self.decode(body)
        reasoning, visible = split_reasoning(text, *self.reasoning_tags) if self.has_reasoning else (None, text)
        if self.parser is not None:
            return reasoning, self.parser.parse(visible, tools)
        return reasoning, ParsedToolCalls(content=visible.strip())

    def _takes_string_arguments(self) -> bool:
        """Whether the template wants tool-call arguments as JSON text (DeepSeek concatenates them) rather
        than as objects (most iterate or `tojson` them): the first shape that renders a probe value wins."""
        renderer = self._renderer
        if renderer is None or self.parser is None:
            return False
        for as_string in (False, True):
            args: Any = {"rollgym_probe_arg": "ROLLGYMARG"}
            call = {"id": "call_0", "type": "function", "function": {"name": "rollgym_probe_tool", "arguments": args}}
            if as_string:
                call["function"]["arguments"] = json.dumps(args)
            conv = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
            try:
                if "ROLLGYMARG" in renderer.render(conv, [_PROBE_TOOL], False):
                    return as_string
            except Exception:  # noqa: BLE001 - a template that cannot take this shape raises anything (jinja, TypeError)
                continue
        return False

    def certify(self, strict: bool = True):
        """Probe this pair (tool results, follow-ups, reasoning, unicode, ...); refuse it when a probe fails.

        A passing report is kept, so certifying the same tokenizer again (every `Policy` does) is free.
        """
        from rollgym.tokenization.certify import certify

        passed = self.__dict__.get("_certified")
        if passed is not None:
            return passed
        report = certify(self, strict=strict)
        if report.passed:
            self.__dict__["_certified"] = report
        return report
