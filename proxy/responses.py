"""OpenAI Responses (`/v1/responses`) in front of the chat logic: input items -> chat messages, reply -> `Response`.

The request is converted to a `ChatCompletionRequest` before matching, so one matching rule serves every
API. Shapes follow openai-python `types/responses/response_create_params.py`, `response.py`,
`response_stream_event.py`. Fields that do not change the rendered prompt (`reasoning`, `include`,
`prompt_cache_key`, `client_metadata`, `metadata`, `parallel_tool_calls`, `truncation`, `user`) are ignored.
A `namespace` tool (a group of function tools: Codex sends each MCP server's tools as one, named `mcp__SERVER`) is
offered to the model as its functions named `NAMESPACE__NAME`, and a call of one goes back as `name` + `namespace`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from rollgym.proxy.error_responses import APIError, bad_request, unsupported
from rollgym.proxy.schemas import ChatCompletionRequest, ChatCompletionResponse
from rollgym.proxy.session import Call, ProxySession
from rollgym.proxy.streaming import PIECE


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class Part(_Lenient):
    type: Literal["input_text", "output_text", "refusal", "input_image", "input_file", "input_audio"]
    text: str | None = None
    refusal: str | None = None


class MessageItem(_Lenient):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[Part]


class FunctionCallItem(_Lenient):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    namespace: str | None = None


def namespaced(name: str, namespace: str | None) -> str:
    """A function's name as the model sees it: `NAMESPACE__NAME` for a function of a namespace tool."""
    return f"{namespace}__{name}" if namespace else name


def namespaces_of(tools: list[dict] | None) -> dict[str, tuple[str, str]]:
    """The model's name of each function of a namespace tool -> (its namespace, its own name)."""
    return {
        namespaced(t["name"], tool["name"]): (tool["name"], t["name"])
        for tool in tools or []
        if tool.get("type") == "namespace" and isinstance(tool.get("name"), str)
        for t in tool.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    }


class FunctionCallOutputItem(_Lenient):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[Part]


class ReasoningItem(_Lenient):
    type: Literal["reasoning"]


def _item_type(value: Any) -> str:
    kind = value.get("type", "message") if isinstance(value, dict) else getattr(value, "type", "message")
    return kind if kind in ("message", "function_call", "function_call_output", "reasoning") else "unknown"


class UnknownItem(_Lenient):
    type: str  # any other item type (item_reference, web_search_call, ...): refused, naming the type


Item = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[UnknownItem, Tag("unknown")],
    Discriminator(_item_type),
]


class ResponsesRequest(_Lenient):
    model: str = ""
    input: list[Item]  # a string is one user message (`_string_input`)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1, le=2**31 - 1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    stream: bool = False
    store: bool | None = None
    previous_response_id: str | None = None
    text: dict[str, Any] | None = None

    @field_validator("input", mode="before")
    @classmethod
    def _string_input(cls, value: Any) -> Any:
        return [{"type": "message", "role": "user", "content": value}] if isinstance(value, str) else value


# --- request -> chat -----------------------------------------------------------------------------


def _text(parts: str | list[Part], where: str) -> str:
    if isinstance(parts, str):
        return parts
    out = []
    for k, part in enumerate(parts):
        if part.type not in ("input_text", "output_text", "refusal"):
            raise unsupported(f"{where}.{k}", f"{part.type!r} parts; only text parts are")
        out.append((part.text if part.type != "refusal" else part.refusal) or "")
    return "\n".join(out)


def input_messages(items: list, where: str = "input") -> list[dict[str, Any]]:
    """Input items as chat messages: an assistant message and the function calls after it form one message."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        here = f"{where}.{i}"
        if isinstance(item, MessageItem):
            role = "system" if item.role == "developer" else item.role
            out.append({"role": role, "content": _text(item.content, f"{here}.content")})
        elif isinstance(item, FunctionCallItem):
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": namespaced(item.name, item.namespace), "arguments": item.arguments},
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif isinstance(item, FunctionCallOutputItem):
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": _text(item.output, f"{here}.output")})
        elif isinstance(item, UnknownItem):
            raise unsupported(
                f"{here}.type",
                f"input items of type {item.type!r}; message, function_call, function_call_output and reasoning are",
            )
    return out


def chat_tools(tools: list[dict] | None) -> tuple[list[dict] | None, list[str]]:
    """Function tools in chat form (a namespace tool's functions named `NAMESPACE__NAME`); hosted tools the model
    cannot call are dropped, with a warning each."""
    out, warnings = [], []
    flat = []
    for tool in tools or []:
        if tool.get("type") == "namespace" and isinstance(tool.get("name"), str) and tool.get("tools"):
            flat += [{**t, "name": namespaced(str(t.get("name")), tool["name"])} for t in tool["tools"]]
        else:
            flat.append(tool)  # an empty namespace: nothing the model can call (dropped below, with a warning)
    for k, tool in enumerate(flat):
        if tool.get("type") != "function":
            label = repr(tool["name"]) if tool.get("name") else f"#{k}"
            warnings.append(
                f"dropped tool {label} of type {tool.get('type')!r}: only function tools can be called by the model"
            )
            continue
        if not isinstance(tool.get("name"), str):
            raise bad_request(f"tools.{k}: a function tool needs a `name`", f"tools.{k}.name")
        fn = {key: tool[key] for key in ("name", "description", "parameters", "strict") if tool.get(key) is not None}
        out.append({"type": "function", "function": fn})
    return out or None, warnings


def _tool_choice(choice: Any, tools: list | None, warnings: list[str]) -> Any:
    if choice is None or choice in ("auto", "none", "required"):
        return choice if tools or choice != "required" else None
    if isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    warnings.append(f"ignored tool_choice {json.dumps(choice)}: only auto, none, required or a function are honoured")
    return None


def to_chat(req: ResponsesRequest, sess: ProxySession) -> tuple[ChatCompletionRequest, list[dict], list[str]]:
    """The equivalent chat request, the conversation to remember (without instructions), and warnings."""
    conversation: list[dict] = []
    if req.previous_response_id is not None:
        previous = sess.recall_response(req.previous_response_id)
        if previous is None:
            raise APIError(
                400,
                f"previous_response_id {req.previous_response_id!r} is not a response this session "
                "made (the proxy remembers the last responses of each session made with `store` not "
                "false); resend the whole conversation in `input` instead",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        conversation = list(previous)
    conversation += input_messages(req.input)
    if not conversation:
        raise bad_request("`input` is empty", "input")
    tools, warnings = chat_tools(req.tools)
    fmt = (req.text or {}).get("format") or {}
    if fmt.get("type") not in (None, "text"):
        raise unsupported("text.format", "the engine cannot constrain decoding to a format")
    messages = (
        [{"role": "system", "content": req.instructions}] if req.instructions is not None else []
    ) + conversation
    chat = ChatCompletionRequest.model_validate(
        {
            "model": req.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": _tool_choice(req.tool_choice, tools, warnings),
            "max_tokens": req.max_output_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
        }
    )
    return chat, conversation, warnings


# --- reply -> Response ------------------------------------------------------------------------------


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def output_items(reply: dict, namespaces: dict[str, tuple[str, str]] | None = None) -> list[dict]:
    """The reply as output items: reasoning (if any), a message (if text, or nothing else), function calls (a call of a
    namespace tool's function by its `name` and `namespace`)."""
    items: list[dict] = []
    if reply.get("reasoning_content"):
        items.append(
            {
                "type": "reasoning",
                "id": _id("rs"),
                "summary": [],
                "content": [{"type": "reasoning_text", "text": reply["reasoning_content"]}],
            }
        )
    calls = reply.get("tool_calls") or []
    if reply.get("content") or not calls:
        items.append(
            {
                "type": "message",
                "id": _id("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.get("content") or "", "annotations": [], "logprobs": []}
                ],
            }
        )
    for c in calls:
        namespace, name = (namespaces or {}).get(c["function"]["name"], (None, c["function"]["name"]))
        items.append(
            {
                "type": "function_call",
                "id": _id("fc"),
                "call_id": c["id"],
                "name": name,
                **({"namespace": namespace} if namespace else {}),
                "arguments": c["function"]["arguments"],
                "status": "completed",
            }
        )
    return items


def to_response(resp: ChatCompletionResponse, call: Call, req: ResponsesRequest) -> dict:
    """The `Response` object for a recorded chat call."""
    truncated = call.finish_reason == "length"
    n_out = len(call.completion_ids)
    return {
        "id": _id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if truncated else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "instructions": req.instructions,
        "max_output_tokens": req.max_output_tokens,
        "model": resp.model,
        "output": output_items(resp.choices[0].message, namespaces_of(req.tools)),
        "parallel_tool_calls": False,
        "previous_response_id": req.previous_response_id,
        "reasoning": None,
        "store": req.store is not False,
        "temperature": req.temperature,
        "text": {"format": {"type": "text"}},
        "tool_choice": req.tool_choice or "auto",
        "tools": req.tools or [],
        "top_p": req.top_p,
        "truncation": "disabled",
        "user": None,
        "metadata": {},
        "usage": {
            "input_tokens": call.prompt_len,
            "input_tokens_details": {"cached_tokens": call.reused_len},
            "output_tokens": n_out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": call.prompt_len + n_out,
        },
    }


# --- streaming ---------------------------------------------------------------------------------------


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)] or [""]


def response_events(response: dict) -> Iterator[str]:
    """A finished `Response` replayed as Responses SSE events, each with `event:` and `sequence_number`."""
    seq = iter(range(1 << 62))

    def event(kind: str, **data: Any) -> str:
        body = {"type": kind, "sequence_number": next(seq), **data}
        return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n"

    pending = {**response, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    yield event("response.created", response=pending)
    yield event("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            part = item["content"][0]
            yield event(
                "response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []}
            )
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", **ids, part={**part, "text": ""})
            for piece in _pieces(part["text"]):
                yield event("response.output_text.delta", **ids, delta=piece, logprobs=[])
            yield event("response.output_text.done", **ids, text=part["text"], logprobs=[])
            yield event("response.content_part.done", **ids, part=part)
        elif item["type"] == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in _pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    # a truncated response too ends with response.completed (status "incomplete"): Codex and openai-python's
    # stream helper fail without that event
    yield event("response.completed", response=response)
