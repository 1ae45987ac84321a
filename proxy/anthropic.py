"""Anthropic Messages (`/v1/messages`) in front of the chat logic: request -> chat messages, reply -> `Message`.

The request is converted to a `ChatCompletionRequest` before matching, so one matching rule serves every
API. Field meanings follow Anthropic's Messages API reference (anthropic-sdk-python `types/message_create_params.py`,
`types/message.py`, `types/raw_message_stream_event.py`). Fields that do not change the rendered prompt
(`cache_control`, `metadata`, `context_management`, `output_config`, `thinking`, `service_tier`) are ignored.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rollgym.proxy.error_responses import APIError, bad_request, unsupported
from rollgym.proxy.params import stop_ids
from rollgym.proxy.schemas import ChatCompletionRequest, ChatCompletionResponse
from rollgym.proxy.session import Call
from rollgym.proxy.streaming import PIECE
from rollgym.tokenization import ChatTokenizer


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class TextBlock(_Lenient):
    type: Literal["text"]
    text: str


class ImageBlock(_Lenient):
    type: Literal["image", "document", "search_result"]


class ToolUseBlock(_Lenient):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Lenient):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[Annotated[TextBlock | ImageBlock, Field(discriminator="type")]] | None = None
    is_error: bool | None = None


class ThinkingBlock(_Lenient):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Lenient):
    type: Literal["redacted_thinking"]


Block = Annotated[
    TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock,
    Field(discriminator="type"),
]


class AnthropicMessage(_Lenient):
    """A turn; `system` turns mid-conversation are accepted (Claude Code's mid-conversation-system beta)."""

    role: Literal["user", "assistant", "system"]
    content: str | list[Block]


class AnthropicTool(_Lenient):
    """A client tool (`input_schema`); server tools (`type` such as web_search_20250305) have none."""

    name: str
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class ToolChoice(_Lenient):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None


class MessagesBody(_Lenient):
    """The fields of a Messages request that shape the prompt (shared by `count_tokens`)."""

    model: str = ""
    messages: list[AnthropicMessage] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[AnthropicTool] | None = None
    tool_choice: ToolChoice | None = None


class MessagesRequest(MessagesBody):
    max_tokens: int = Field(ge=1, le=2**31 - 1)
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0, le=2**31 - 1)
    stop_sequences: list[str] | None = None
    stream: bool = False


# --- request -> chat -----------------------------------------------------------------------------


def _joined(blocks: list[TextBlock]) -> str:
    return "\n".join(b.text for b in blocks)


def _tool_result(block: ToolResultBlock, where: str) -> dict[str, Any]:
    if isinstance(block.content, list):
        for k, part in enumerate(block.content):
            if not isinstance(part, TextBlock):
                raise unsupported(f"{where}.content.{k}", f"{part.type!r} blocks in a tool_result; only text is")
        text = _joined(block.content)  # type: ignore[arg-type]  # every block was checked to be a TextBlock just above
    else:
        text = block.content or ""
    return {"role": "tool", "tool_call_id": block.tool_use_id, "content": f"Error: {text}" if block.is_error else text}


def _user_turn(blocks: list, where: str) -> list[dict[str, Any]]:
    """A user turn's blocks in order: each tool_result a tool message, runs of text one user message."""
    out: list[dict[str, Any]] = []
    texts: list[TextBlock] = []
    for k, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            texts.append(block)
            continue
        if texts:
            out.append({"role": "user", "content": _joined(texts)})
            texts = []
        if isinstance(block, ToolResultBlock):
            out.append(_tool_result(block, f"{where}.{k}"))
        elif isinstance(block, (ThinkingBlock, RedactedThinkingBlock)):
            continue
        else:
            raise unsupported(f"{where}.{k}", f"{block.type!r} blocks in a user turn; text and tool_result are")
    if texts or not out:
        out.append({"role": "user", "content": _joined(texts)})
    return out


def _assistant_turn(blocks: list, where: str) -> dict[str, Any]:
    """An assistant turn: text -> content, tool_use -> tool_calls (arguments as JSON), thinking -> reasoning."""
    texts, calls, thoughts = [], [], []
    for k, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            texts.append(block)
        elif isinstance(block, ToolUseBlock):
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": json.dumps(block.input, ensure_ascii=False)},
                }
            )
        elif isinstance(block, ThinkingBlock):
            thoughts.append(block.thinking)
        elif isinstance(block, RedactedThinkingBlock):
            continue
        else:
            raise unsupported(f"{where}.{k}", f"{block.type!r} blocks in an assistant turn")
    msg: dict[str, Any] = {"role": "assistant", "content": _joined(texts)}
    if calls:
        msg["tool_calls"] = calls
    if thoughts:
        msg["reasoning_content"] = "\n".join(thoughts)
    return msg


def chat_messages(body: MessagesBody) -> list[dict[str, Any]]:
    """The conversation as OpenAI chat messages (what the chat route would have been sent)."""
    out: list[dict[str, Any]] = []
    if body.system is not None:
        system = body.system if isinstance(body.system, str) else _joined(body.system)
        out.append({"role": "system", "content": system})
    for i, msg in enumerate(body.messages):
        where = f"messages.{i}.content"
        if isinstance(msg.content, str):
            out.append({"role": msg.role, "content": msg.content})
        elif msg.role == "assistant":
            out.append(_assistant_turn(msg.content, where))
        elif msg.role == "system":
            if not all(isinstance(b, TextBlock) for b in msg.content):
                raise bad_request(f"{where}: a system message holds text blocks only", where)
            out.append({"role": "system", "content": _joined(msg.content)})  # type: ignore[arg-type]  # all TextBlocks: checked just above
        else:
            out.extend(_user_turn(msg.content, where))
    return out


def chat_tools(body: MessagesBody) -> tuple[list[dict] | None, list[str]]:
    """Client tools as chat function tools; server tools (no `input_schema`) are dropped, with a warning."""
    tools, warnings = [], []
    for t in body.tools or []:
        if t.input_schema is None:
            warnings.append(f"dropped server tool {t.name!r} (type {t.type!r}): the model can only call client tools")
            continue
        fn: dict[str, Any] = {"name": t.name, "parameters": t.input_schema}
        if t.description is not None:
            fn["description"] = t.description
        tools.append({"type": "function", "function": fn})
    return tools or None, warnings


def _tool_choice(choice: ToolChoice | None) -> Any:
    if choice is None:
        return None
    if choice.type == "tool":
        if not choice.name:
            raise bad_request("tool_choice: type 'tool' needs a `name`", "tool_choice.name")
        return {"type": "function", "function": {"name": choice.name}}
    return {"auto": "auto", "any": "required", "none": "none"}[choice.type]


def to_chat(
    body: MessagesBody, tokenizer: ChatTokenizer, max_tokens_cap: int
) -> tuple[ChatCompletionRequest, list[str]]:
    """The equivalent chat request (max_tokens capped by the proxy's limit) and translation warnings."""
    tools, warnings = chat_tools(body)
    fields: dict[str, Any] = {
        "model": body.model,
        "messages": chat_messages(body),
        "tools": tools,
        "tool_choice": _tool_choice(body.tool_choice) if tools or body.tool_choice else None,
    }
    if fields["tool_choice"] == "required" and not tools:
        raise bad_request("tool_choice is 'any' but no client `tools` were given", "tool_choice")
    if isinstance(body, MessagesRequest):
        if body.stop_sequences:
            try:
                stop_ids(body.stop_sequences, tokenizer)
            except APIError as exc:
                raise unsupported("stop_sequences", exc.message.split(": ", 1)[-1]) from None
        fields.update(
            max_tokens=min(body.max_tokens, max_tokens_cap),
            temperature=body.temperature,
            top_p=body.top_p,
            top_k=body.top_k,
            stop=body.stop_sequences or None,
        )
    return ChatCompletionRequest.model_validate(fields), warnings


# --- reply -> Message ------------------------------------------------------------------------------


def _input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def to_message(resp: ChatCompletionResponse, call: Call, body: MessagesRequest, tokenizer: ChatTokenizer) -> dict:
    """The Anthropic `Message` for a recorded chat call (thinking, text and tool_use blocks, stop_reason, usage)."""
    reply = resp.choices[0].message
    content: list[dict[str, Any]] = []
    if reply.get("reasoning_content"):
        content.append({"type": "thinking", "thinking": reply["reasoning_content"], "signature": ""})
    calls = reply.get("tool_calls") or []
    if reply.get("content") or not calls:
        content.append({"type": "text", "text": reply.get("content") or ""})
    for c in calls:
        content.append(
            {
                "type": "tool_use",
                "id": c["id"],
                "name": c["function"]["name"],
                "input": _input(c["function"]["arguments"]),
            }
        )
    stop_reason, stop_sequence = "end_turn", None
    if call.finish_reason == "length":
        stop_reason = "max_tokens"
    elif calls:
        stop_reason = "tool_use"
    elif body.stop_sequences and call.completion_ids and call.completion_ids[-1] != tokenizer.end_of_turn_id:
        by_id = dict(zip(stop_ids(body.stop_sequences, tokenizer), body.stop_sequences, strict=False))
        if call.completion_ids[-1] in by_id:
            stop_reason, stop_sequence = "stop_sequence", by_id[call.completion_ids[-1]]
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": {
            "input_tokens": call.prompt_len,
            "output_tokens": len(call.completion_ids),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


# --- streaming ---------------------------------------------------------------------------------------


def _event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data}, ensure_ascii=False)}\n\n"


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)] or [""]


def message_events(message: dict) -> Iterator[str]:
    """A finished `Message` replayed as Anthropic's named SSE events (message_start ... message_stop)."""
    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 0},
    }
    yield _event("message_start", {"message": start})
    yield _event("ping", {})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for piece in _pieces(block["text"]):
                yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        elif block["type"] == "thinking":
            yield _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
            )
            for piece in _pieces(block["thinking"]):
                yield _event(
                    "content_block_delta", {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}}
                )
        else:
            yield _event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            for piece in _pieces(json.dumps(block["input"], ensure_ascii=False)):
                yield _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
        yield _event("content_block_stop", {"index": index})
    yield _event(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield _event("message_stop", {})
